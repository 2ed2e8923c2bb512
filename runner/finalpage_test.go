package runner_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/intents"
	"github.com/pairbench/pairbench/model"
	"github.com/pairbench/pairbench/runner"
)

// plainBrowsers hands out browsers that offer runner.Browser alone, as a
// provider that cannot read a page would.
type plainBrowsers struct{ runner.Browsers }

func (p plainBrowsers) Open(ctx context.Context, spec runner.BrowserSpec) (runner.Browser, error) {
	b, err := p.Browsers.Open(ctx, spec)
	if err != nil {
		return nil, err
	}
	return struct{ runner.Browser }{b}, nil
}

// TestAPageThatCannotBeReadAbortsTheTrial: an intent with checks on a
// browser that cannot read its final page says nothing about the agent:
// the trial aborts, saying why, and its pair runs again.
func TestAPageThatCannotBeReadAbortsTheTrial(t *testing.T) {
	s := newStack(t, []string{"weather-high-oslo"}, model.Options{}).trial(t, model.Options{})
	s.trials.Intents["weather-high-oslo"].Intent.Checks = []intents.Check{{Selector: "h1"}}
	s.trials.Browsers = plainBrowsers{s.trials.Browsers}
	row := s.run(t, "weather-high-oslo", pairbench.Control)
	assert.Equal(t, pairbench.Aborted, row.Outcome)
	assert.Equal(t, "this browser provider cannot read the final page, which the intent's checks or judge need", row.Reason)
}
