package action

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestActionEffectInput plans runs with pairs auto, as a plan job would:
// without effect the plan is sized for pairbench's default (a 1.5×
// speedup), with effect +20pp for that accuracy gain, which needs more
// pairs. An effect without pairs auto, or one that is no effect at all, is
// refused before anything is planned.
func TestActionEffectInput(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the smoke gate in a real browser (Chromium, pi in bubblewrap); not in -short")
	}
	b := newBench(t)
	plan := func(name string, extra map[string]string) int {
		t.Helper()
		in := map[string]string{"mode": "plan", "total-shards": "1", "intents": "weather-high-oslo", "pairs": "auto",
			"allow-inconclusive": "", "run-id": "gh-" + name}
		for k, v := range extra {
			in[k] = v
		}
		b.mustRun(name, b.inputs(in))
		p := storedPlan(t, b, "gh-"+name)
		require.Len(t, p.Intents, 1)
		return len(p.Intents[0].Pairs)
	}
	speedup := plan("default", nil)
	accuracy := plan("accuracy", map[string]string{"effect": "+20pp"})
	assert.Greater(t, accuracy, speedup, "+20pp needs more pairs than a 1.5× speedup (%d, %d)", accuracy, speedup)
	assert.Equal(t, speedup, plan("speedup", map[string]string{"effect": "1.5x"}), "the default is 1.5×")

	refusedBeforePlanning(t, b, map[string]string{"mode": "plan", "total-shards": "1", "pairs": "auto"}, map[string]refusal{
		"fixed":   {map[string]string{"effect": "+20pp", "pairs": "3"}, "input effect is what pairs auto plans for"},
		"hostile": {map[string]string{"effect": "1.5x --pairs 1000"}, "input effect is not valid"},
	})
}

// refusal is inputs the Action must refuse, and what its log then says.
type refusal struct {
	in   map[string]string
	says string
}

// refusedBeforePlanning runs a job per refusal, its inputs over base: each
// fails saying why, and nothing is planned.
func refusedBeforePlanning(t *testing.T, b *bench, base map[string]string, cases map[string]refusal) {
	t.Helper()
	for name, tc := range cases {
		in := map[string]string{"run-id": "gh-" + name}
		for _, m := range []map[string]string{base, tc.in} {
			for k, v := range m {
				in[k] = v
			}
		}
		res, err := b.run(name, b.inputs(in))
		require.NoError(t, err)
		assert.True(t, res.Failed, name)
		assert.Contains(t, res.Log, tc.says, name)
		assert.False(t, b.exists("gh-"+name+"/run.json"), "%s: nothing planned", name)
	}
}
