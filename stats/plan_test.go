package stats

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCheckPlanTheExampleRegistry: four intents at seven pairs (the demo)
// can never get an intent a label (2·½⁷ is above α/3 over 8 tests), but
// the run's verdict, over 28 pairs, can be reached.
func TestCheckPlanTheExampleRegistry(t *testing.T) {
	c := CheckPlan(4, 7, 0.05)
	assert.False(t, c.Intent.Attainable, c.Text())
	assert.True(t, c.Verdict.Attainable, c.Text())
	assert.True(t, c.Reachable())
	assert.Contains(t, c.Text(), "each intent, 7 pairs: no label is attainable")
	assert.Greater(t, c.Verdict.Speedup, 1.0)
}

// TestCheckPlanSaysWhatItCannotDetect: two intents of seven pairs can
// reach the verdict, but under the planning model (90% correct per arm) a
// speed claim often meets more control-only than treatment-only pairs and
// needs the composite test too, so no speedup up to 4× has 80% power; the
// text says so in words, not as "a speedup of none".
func TestCheckPlanSaysWhatItCannotDetect(t *testing.T) {
	small := CheckPlan(2, 7, 0.05)
	require.True(t, small.Verdict.Attainable)
	assert.Zero(t, small.Verdict.Speedup)
	assert.Contains(t, small.Text(), "detected with 80% power: no speedup up to 4×, no accuracy gain up to +30 pp")
	big := CheckPlan(10, 5, 0.05)
	require.Positive(t, big.Verdict.Speedup)
	assert.Regexp(t, `detected with 80% power: a speedup of 1\.\d\d× or more, an accuracy gain of \+\d+ pp or more`, big.Text())
}

// TestCheckPlanUnreachable: one intent of five pairs reaches nothing; six
// pairs are needed (2·½⁶ ≤ 0.05).
func TestCheckPlanUnreachable(t *testing.T) {
	assert.False(t, CheckPlan(1, 5, 0.05).Reachable())
	assert.True(t, CheckPlan(1, 6, 0.05).Reachable())
	assert.Equal(t, 6, PairsForVerdict(1, 0.05))
	assert.Equal(t, 2, PairsForVerdict(4, 0.05), "8 pooled pairs reach α/3")
}

// TestAutoPairsIsTheFewest: --pairs auto's answer detects the effect and
// one pair fewer does not; the targets hold (1.5× over 10 intents in at
// most 5 pairs, +20 pp in at most 10). verdictsim's TestAutoPairsDeliver
// checks the power by simulating the runs themselves.
func TestAutoPairsIsTheFewest(t *testing.T) {
	for _, tc := range []struct {
		effect string
		most   int
	}{{"1.5x", 5}, {"+20pp", 10}, {"2x", 5}} {
		e, err := ParseEffect(tc.effect)
		require.NoError(t, err)
		n, err := AutoPairs(10, 0.05, e)
		require.NoError(t, err)
		assert.LessOrEqual(t, n, tc.most, tc.effect)
		assert.True(t, CheckPlan(10, n, 0.05).Verdict.detects(e), tc.effect)
		assert.False(t, CheckPlan(10, n-1, 0.05).Verdict.detects(e), "%s: %d pairs are not enough", tc.effect, n-1)
	}
	_, err := AutoPairs(1, 0.05, Effect{Speedup: 1.0001})
	assert.ErrorIs(t, err, ErrNoPairs)
}

func TestParseEffect(t *testing.T) {
	e, err := ParseEffect("1.5x")
	require.NoError(t, err)
	assert.Equal(t, Effect{Speedup: 1.5}, e)
	e, err = ParseEffect("+20pp")
	require.NoError(t, err)
	assert.InDelta(t, 0.2, e.Accuracy, 1e-12)
	for _, bad := range []string{"", "1x", "0.8x", "fast", "+40pp", "-5pp", "NaNx", "infx"} {
		_, err := ParseEffect(bad)
		assert.Error(t, err, bad)
	}
}
