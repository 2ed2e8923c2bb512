package bench_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench/bench"
	"github.com/pairbench/pairbench/intents"
)

// TestValidationSummary validates the example registry and reads the lines
// validate prints from the Validation: the summary counts what the
// registry holds, names the browser check only when it ran, and numbers
// agree with their nouns.
func TestValidationSummary(t *testing.T) {
	const dir = "../examples/registry"
	v, err := bench.Validate(t.Context(), dir, bench.ValidateOptions{Now: time.Now()})
	require.NoError(t, err)
	require.Empty(t, v.Problems)
	assert.False(t, v.BrowserChecked)
	assert.Equal(t, dir+": ok: 2 domains, 4 tools (3 registered), 4 intents; every baseline answer grades correct", v.Summary(dir))

	v.BrowserChecked, v.Pages, v.Browsers = true, 1, 3
	assert.Equal(t, dir+": ok: 2 domains, 4 tools (3 registered), 4 intents; every baseline answer grades correct"+
		"; in Chromium every tool file is live where its URL patterns match and nowhere else (1 page, 3 browsers)", v.Summary(dir))

	v.Registry = &intents.Registry{Domains: v.Registry.Domains[:1], Intents: v.Registry.Intents[:1]}
	assert.Contains(t, v.Summary(dir), ": ok: 1 domain, ")
	assert.Contains(t, v.Summary(dir), ", 1 intent; ")

	v.Problems = intents.Problems{{Msg: "a"}}
	assert.Equal(t, "1 problem", v.ProblemCount())
	v.Problems = append(v.Problems, intents.Problem{Msg: "b"})
	assert.Equal(t, "2 problems", v.ProblemCount())
}
