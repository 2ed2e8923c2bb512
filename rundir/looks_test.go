package rundir

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/report"
	"github.com/pairbench/pairbench/stats"
)

// TestTopUp: a top-up keeps every planned pair and its order, adds pairs
// numbered on with orders balanced among themselves, records the looks
// (the report's level is the last look's share of α) and leaves the plan
// it was given alone; fewer pairs are refused, saying how to resume.
func TestTopUp(t *testing.T) {
	p := testPlan()
	p.Intents[1].Pairs = append(p.Intents[1].Pairs, PlannedPair{Pair: 1, Order: pairbench.AB})
	before, err := json.Marshal(p)
	require.NoError(t, err)

	q, err := p.TopUp(6)
	require.NoError(t, err)
	after, err := json.Marshal(p)
	require.NoError(t, err)
	assert.JSONEq(t, string(before), string(after), "the plan topped up is unchanged")
	assert.Equal(t, []int{2, 6}, q.Looks)
	for i, in := range q.Intents {
		require.Len(t, in.Pairs, 6, in.ID)
		assert.Equal(t, p.Intents[i].Pairs, in.Pairs[:2], "%s: the planned pairs as they were", in.ID)
		ab := 0
		for j, pp := range in.Pairs[2:] {
			assert.Equal(t, 2+j, pp.Pair)
			if pp.Order == pairbench.AB {
				ab++
			}
		}
		assert.Equal(t, 2, ab, "%s: the 4 new pairs are balanced", in.ID)
	}
	require.NoError(t, q.Validate())
	assert.Equal(t, 6, q.StatsPlan().Intents[0].Pairs, "the report counts every pair")
	d := q.Design()
	require.NotNil(t, d)
	assert.Equal(t, []float64{2.0 / 6, 1}, d.Looks)
	assert.InDelta(t, 0.05-stats.Spent(0.05, 2.0/6), q.StatsPlan().Alpha, 1e-12, "the last look decides at the α left")
	assert.Less(t, q.StatsPlan().Alpha, 0.05)
	assert.Equal(t, &report.Looked{Pairs: []int{2, 6}, Look: 2, RunAlpha: 0.05}, q.StatsPlan().Looks)

	again, err := q.TopUp(9)
	require.NoError(t, err)
	assert.Equal(t, []int{2, 6, 9}, again.Looks, "a second top-up adds a look")
	assert.Len(t, again.Intents[0].Pairs, 9)

	same, err := q.TopUp(6)
	require.NoError(t, err)
	assert.Equal(t, q, same, "as many pairs: the plan as it was")

	_, err = q.TopUp(4)
	require.Error(t, err)
	assert.Equal(t, "run r1 plans 6 pairs per intent and a resume cannot drop planned pairs; resume with --pairs 6, or more to top it up", err.Error())
}

// TestPlanWithoutLooks: a run.json from before top-ups has no looks, one
// look at all its pairs, and reports at the plan's α; looks that are not
// ascending or end short of the pairs are refused.
func TestPlanWithoutLooks(t *testing.T) {
	p := testPlan()
	b, err := json.Marshal(p)
	require.NoError(t, err)
	assert.NotContains(t, string(b), `"looks"`)
	got, err := ReadPlan(writeFile(t, "run.json", string(b)))
	require.NoError(t, err)
	assert.Nil(t, got.Design())
	assert.Equal(t, 0.05, got.StatsPlan().Alpha)
	assert.Nil(t, got.StatsPlan().Looks)

	for _, looks := range [][]int{{2, 2}, {0, 2}, {1}} {
		p.Looks = looks
		assert.ErrorContains(t, p.Validate(), "looks", "%v", looks)
	}
}

// TestTopUpAfterAStop: a run that stopped claiming a difference is not
// topped up (its α is spent on the claim), saying why; one that stopped
// for futility goes on from its next look, the look it stopped at passed
// and never decided again, its skipped pairs in force again.
func TestTopUpAfterAStop(t *testing.T) {
	claimed := looksPlan(10, 12)
	claimed.Stop = &LookStop{Look: 1, Pairs: 4, Kind: report.StopEfficacy, Verdict: pairbench.Faster, Claimed: true}
	_, err := claimed.TopUp(18)
	var ce *ClaimedError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "run r1 claimed a difference (the verdict faster) at look 1 of 3, 4 pairs per intent: its α is spent on that claim, so topping it up to 18 pairs would test again what it decided, which its design does not cover; bench the change again under a new --run-id", err.Error())
	same, err := claimed.TopUp(12)
	require.NoError(t, err, "a resume with the pairs it planned is no top-up")
	assert.Equal(t, claimed.Stop, same.Stop, "and stays stopped")

	futile := looksPlan(10, 12)
	futile.Stop = &LookStop{Look: 1, Pairs: 4, Kind: report.StopFutility, Verdict: pairbench.NoSignal}
	require.Equal(t, []int{4, 8, 12}, futile.Looks)
	assert.Len(t, futile.PairsInForce(), 10*4)
	q, err := futile.TopUp(18)
	require.NoError(t, err)
	require.NoError(t, q.Validate())
	assert.Nil(t, q.Stop)
	assert.Equal(t, 1, q.Passed)
	assert.Equal(t, []int{4, 8, 12, 18}, q.Looks)
	assert.Len(t, q.PairsInForce(), 10*18)
	l := NewLooker(q)
	require.Len(t, l.looks, 3, "the passed look is not decided again")
	assert.Equal(t, 1, l.looks[0].k)
	assert.InDelta(t, stats.Spent(0.05, 8.0/18)-stats.Spent(0.05, 4.0/18), q.StatsPlanAt(1).Alpha, 1e-12)
}
