package bench_test

import (
	"slices"
	"testing"
	"time"

	"github.com/pairbench/pairbench/rundir"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench/bench"
	"github.com/pairbench/pairbench/browser/toolcheck"
	"github.com/pairbench/pairbench/intents"
	"github.com/pairbench/pairbench/runner"
	"github.com/pairbench/pairbench/stats"
)

// TestDemoConfigCanReachALabel: the demo is a bench Check accepts, and its
// pairs are the fewest with which every one of its intents can be labelled
// after Holm's correction: all pairs faster gives an adjusted p at most
// alpha, one pair fewer does not; it takes one look, at alpha.
func TestDemoConfigCanReachALabel(t *testing.T) {
	c := bench.DemoConfig()
	c.RunID = "demo"
	require.NoError(t, c.Check())
	holmBest := func(pairs int) float64 {
		ps := make([]float64, len(c.Intents))
		for i := range ps {
			ps[i] = stats.SignTest(pairs, 0)
		}
		return slices.Max(stats.Holm(ps))
	}
	assert.LessOrEqual(t, holmBest(c.Pairs), c.Alpha, "%d of %d faster in each intent is significant", c.Pairs, c.Pairs)
	assert.Greater(t, holmBest(c.Pairs-1), c.Alpha, "fewer pairs would do")
	assert.Nil(t, c.Design(), "one look at α, which the argument above needs (a look at 5 pairs would stop on the pooled verdict)")
	assert.NotNil(t, bench.DefaultConfig().Design(), "run takes looks")
}

// TestDemoSmokeGateCoversEveryExampleIntent: the demo benches three of the
// four example intents, and its smoke gate still checks the treatment setup
// of all four: for each, a page at its start URL in a browser holding its
// domain's tools, where its entry tool's patterns match (the gate requires
// every such tool live, none failed).
func TestDemoSmokeGateCoversEveryExampleIntent(t *testing.T) {
	reg, err := intents.Load("../examples/registry")
	require.NoError(t, err)
	plan, _, err := runner.NewPlan(reg, runner.PlanOptions{RunID: "demo", Intents: bench.DemoConfig().Intents, Pairs: 1, Seed: 1, Alpha: 0.05,
		Now: time.Now(), Model: rundir.Model{Provider: "pairbench", ID: "pairbench-scripted", Scripted: true}})
	require.NoError(t, err)
	tis, err := runner.TrialIntents(reg, plan)
	require.NoError(t, err)
	var list []*runner.TrialIntent
	for _, in := range plan.Intents {
		list = append(list, tis[in.ID])
	}
	sets := toolcheck.ForPlan(list)
	require.Len(t, reg.Intents, 4)
	for _, in := range reg.Intents {
		covered := slices.ContainsFunc(sets, func(s toolcheck.Set) bool {
			return slices.ContainsFunc(s.Pages, func(p toolcheck.Page) bool { return p.URL == in.StartURL }) &&
				slices.ContainsFunc(s.Tools, func(tool intents.Tool) bool { return tool.Name == in.EntryTool && tool.Matches(in.StartURL) })
		})
		assert.True(t, covered, "the demo's smoke gate checks %s's treatment setup", in.ID)
	}
}
