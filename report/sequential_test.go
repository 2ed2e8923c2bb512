package report

import (
	"math"
	"testing"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/stats"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestStop: a claiming verdict stops at any look; futility before the
// last when both pooled tests are far from significance; the last look
// always ends the run.
func TestStop(t *testing.T) {
	d := stats.DefaultDesign()
	r := &Report{Alpha: 0.0157, Verdict: pairbench.Faster}
	stop, why := Stop(d, r, 1)
	assert.True(t, stop)
	assert.Contains(t, why, "look 2 of 3: the verdict faster")

	r = &Report{Alpha: d.LookAlpha(0.05, 0), Looks: &Looked{Pairs: []int{4, 8, 12}, Look: 1, RunAlpha: 0.05},
		Verdict: pairbench.NoSignal, Headline: &Headline{Speed: PooledSpeed{P: 0.6}, Accuracy: PooledAccuracy{P: 0.9}}}
	stop, why = Stop(d, r, 0)
	assert.True(t, stop)
	assert.Contains(t, why, "futility")
	r.Headline.Speed.P = 0.1
	stop, _ = Stop(d, r, 0)
	assert.False(t, stop, "a trend keeps the run going")
	stop, why = Stop(d, r, 2)
	assert.True(t, stop)
	assert.Contains(t, why, "every planned pair is done")
	assert.False(t, math.IsNaN(d.LookAlpha(0.05, 2)))
}

// TestStopWhenNoClaimIsWithinReach: a look of one intent at 2 of 6 pairs,
// both correct in both arms, treatment faster in one and slower in the
// other, can reach no label at the last look (at α 0.05: 5 of 6 pairs
// one way at best, p 0.0625), so a design that curtails stops it for
// futility there; with both pairs faster the label is within reach (6 of
// 6, p 0.03125) and the run goes on; a design that does not curtail, or a
// report built without the later looks, goes on either way.
func TestStopWhenNoClaimIsWithinReach(t *testing.T) {
	d := stats.Design{Looks: []float64{2.0 / 6, 4.0 / 6, 1}, FutilityPower: stats.DefaultFutilityPower, Curtail: true,
		Blind: []bool{true, true, false}, CurtailOnly: []bool{true, true, false}}
	require.NoError(t, d.Check())
	plan := Plan{RunID: "t", Alpha: 0, Intents: []PlanIntent{{ID: "books", Domain: "books.example", Class: pairbench.AnswerPinned, Pairs: 2}},
		Later: []LaterLook{{Alpha: 0.05, Pairs: map[string]int{"books": 4}}, {Alpha: 0.05, Pairs: map[string]int{"books": 6}}}}
	split := append(pairRows("books", 0, ok(100), ok(50)), pairRows("books", 1, ok(50), ok(60))...)
	kind, why := Decide(d, Build(plan, split), 0)
	assert.Equal(t, StopFutility, kind)
	assert.Contains(t, why, "no claim can be reached at a later look")

	agree := append(pairRows("books", 0, ok(100), ok(50)), pairRows("books", 1, ok(60), ok(50))...)
	kind, _ = Decide(d, Build(plan, agree), 0)
	assert.Empty(t, kind, "6 of 6 pairs faster would still be a label")

	kind, _ = Decide(d, Build(Plan{RunID: "t", Intents: plan.Intents}, split), 0)
	assert.Empty(t, kind, "no later looks given: nothing known of them")
	old := d
	old.Curtail, old.CurtailOnly = false, nil
	_, why = Decide(old, Build(plan, split), 0)
	assert.NotContains(t, why, "no claim can be reached", "a design that does not curtail")
	assert.Equal(t, 0.0, d.FutilityAt(0.05, 0), "a look kept for curtailment alone has no conditional-power bound")
}
