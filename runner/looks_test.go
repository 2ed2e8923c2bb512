package runner

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/rundir"
	"github.com/pairbench/pairbench/stats"
)

// TestNewPlanTakesLooks: a plan made with a design freezes its looks and
// futility bound, and balances each look's orders on its own.
func TestNewPlanTakesLooks(t *testing.T) {
	d := stats.DefaultDesign()
	assert.Equal(t, []int{4, 8, 12}, rundir.LookPairs(&d, 12, 10, 0.05))
	assert.Equal(t, []int{4, 8, 12}, rundir.LookPairs(&d, 12, 2, 0.05), "4 pairs of 2 intents cannot reach a verdict at the first look's level, but can stop for futility")
	assert.Equal(t, []int{3, 5, 7}, rundir.LookPairs(&d, 7, 2, 0.05), "the demo's pairs")
	old := stats.Design{Looks: d.Looks, Futility: 0.2}
	assert.Equal(t, []int{8, 12}, rundir.LookPairs(&old, 12, 2, 0.05), "a design of one futility bound leaves the blind look out")
	assert.Equal(t, []int{2, 4, 6}, rundir.LookPairs(&d, 6, 1, 0.05), "too few pairs at the looks before the last for conditional power, but some outcomes leave no label within reach")
	noCurtail := d
	noCurtail.Curtail = false
	assert.Nil(t, rundir.LookPairs(&noCurtail, 6, 1, 0.05), "too few pairs at the looks before the last to tell anything")
	assert.Nil(t, rundir.LookPairs(&d, 5, 1, 0.05), "5 pairs of one intent can reach no label: run anyway, they run every pair")
	assert.Nil(t, rundir.LookPairs(&d, 3, 1, 0.05), "no look before the last could reach a verdict")
	assert.Nil(t, rundir.LookPairs(&d, 1, 10, 0.05), "one pair is one look")
	assert.Nil(t, rundir.LookPairs(nil, 12, 10, 0.05))
	assert.Equal(t, 0.05, rundir.LastLookAlpha(nil, 12, 10, 0.05))
	assert.InDelta(t, 0.05-stats.Spent(0.05, 8.0/12), rundir.LastLookAlpha(&d, 12, 10, 0.05), 1e-12)

	opts := planOpts()
	opts.Pairs, opts.Design = 12, &d
	p, _, err := NewPlan(loadExamples(t), opts)
	require.NoError(t, err)
	assert.Equal(t, []int{4, 8, 12}, p.Looks, "the examples' 2 benched intents")
	assert.True(t, p.Curtail, "the plan records that its looks stop when no claim is within reach")
	assert.False(t, p.FutilityOnly, "the examples' benched intents at 12 pairs are not low-powered: the design as it is")
	assert.Equal(t, stats.DefaultFutilityPower, p.FutilityPower)
	assert.Zero(t, p.Futility)
	small := opts
	small.Pairs, small.Intents = 7, []string{"books-cheapest-by-author", "books-count-by-author"}
	low, _, err := NewPlan(loadExamples(t), small)
	require.NoError(t, err)
	assert.Equal(t, []int{3, 5, 7}, low.Looks)
	assert.True(t, low.FutilityOnly, "2 intents at 7 pairs (the demo's) find a 1.5× speedup about 33% of the time: futility-only looks")
	assert.Equal(t, stats.DefaultLowPower, low.FutilityPower)
	assert.Nil(t, p.Stop)
	placebo := opts
	placebo.Intents = []string{"weather-high-oslo"}
	alone, _, err := NewPlan(loadExamples(t), placebo)
	require.NoError(t, err)
	assert.Nil(t, alone.Looks, "a run of placebo intents alone takes no looks")
	assert.Zero(t, alone.FutilityPower)
	assert.False(t, alone.Curtail)
	assert.False(t, alone.FutilityOnly)
	opts.Design = nil
	fixed, _, err := NewPlan(loadExamples(t), opts)
	require.NoError(t, err)
	assert.Nil(t, fixed.Looks, "no design: one look")
	assert.Zero(t, fixed.FutilityPower)
	assert.False(t, fixed.Curtail)
	for _, look := range [][2]int{{0, 8}, {8, 12}} {
		ab := 0
		for _, pp := range p.Intents[0].Pairs[look[0]:look[1]] {
			if pp.Order == pairbench.AB {
				ab++
			}
		}
		assert.Equal(t, (look[1]-look[0])/2, ab, "pairs %v: half AB", look)
	}
	p.Intents[0].Pairs[0].Pair = 40
	assert.ErrorContains(t, p.Validate(), "numbers its pairs from 0 in order")
}
