package stats

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/stat/distuv"
)

// TestSpendingAddsUpToAlpha: the default design's looks spend, O'Brien–
// Fleming type, 2 − 2Φ(1.96/√t): 0.00069 by a third, 0.0164 by two thirds (erfc, computed apart),
// and every look's share adds up to α exactly.
func TestSpendingAddsUpToAlpha(t *testing.T) {
	d := DefaultDesign()
	require.NoError(t, d.Check())
	assert.InDelta(t, 0.00068689, Spent(0.05, 1.0/3), 1e-8) // erfc(1.959964·√3/√2)
	assert.InDelta(t, 0.01637467, Spent(0.05, 2.0/3), 1e-8) // erfc(1.959964·√1.5/√2)
	assert.Equal(t, 0.05, Spent(0.05, 1))
	sum := 0.0
	for k := range d.Looks {
		a := d.LookAlpha(0.05, k)
		assert.Positive(t, a)
		sum += a
	}
	assert.InDelta(t, 0.05, sum, 1e-15)
	// A single look is the fixed design.
	assert.Equal(t, 0.05, Design{Looks: []float64{1}}.LookAlpha(0.05, 0))
}

func TestDesignCheckAndLookPairs(t *testing.T) {
	for _, bad := range []Design{{}, {Looks: []float64{0.5}}, {Looks: []float64{0.6, 0.3, 1}}, {Looks: []float64{0, 1}}, {Looks: []float64{1}, Futility: 1}} {
		assert.Error(t, bad.Check(), "%+v", bad)
	}
	d := DefaultDesign()
	assert.Equal(t, []int{4, 8, 12}, []int{d.LookPairs(12, 0), d.LookPairs(12, 1), d.LookPairs(12, 2)})
	assert.Equal(t, []int{1, 2, 2}, []int{d.LookPairs(2, 0), d.LookPairs(2, 1), d.LookPairs(2, 2)})
}

// TestFutilityFromConditionalPower: the default design's futility bound at
// a look is the p at which a pooled test's conditional power, under the
// effect the last look detects with 80% power, is the design's 0.6,
// computed here from the formula of docs/statistics.md; a design of one
// bound keeps it at every look, and the last look has none.
func TestFutilityFromConditionalPower(t *testing.T) {
	d := DefaultDesign()
	N := distuv.UnitNormal
	c := N.Quantile(1 - d.LookAlpha(0.05, 2)/2)
	theta := c + N.Quantile(0.8)
	for k, want := range []float64{0.54, 0.12} {
		f := d.FutilityAt(0.05, k)
		assert.InDelta(t, want, f, 0.005, "look %d", k+1)
		z, tk := N.Quantile(1-f/2), d.Looks[k]
		cp := 1 - N.CDF((c-z*math.Sqrt(tk)-theta*(1-tk))/math.Sqrt(1-tk))
		assert.InDelta(t, DefaultFutilityPower, cp, 1e-9, "look %d: conditional power at the bound", k+1)
	}
	assert.Zero(t, d.FutilityAt(0.05, 2))
	assert.Equal(t, 0.2, Design{Looks: d.Looks, Futility: 0.2}.FutilityAt(0.05, 1))
	assert.Equal(t, 1.0, Design{Looks: []float64{0.05, 1}, FutilityPower: 0.6}.FutilityAt(0.05, 0), "too early to stop whatever the data")
}

// TestMarkBlind: a look at which the verdict cannot be reached spends no
// α: the next look spends from the last look that is not blind, so the
// levels of the looks that are not blind add up to α; looks passed keep
// theirs.
func TestMarkBlind(t *testing.T) {
	d := DefaultDesign()
	d.MarkBlind([]int{5, 10, 15}, 1, 0.05, 0)
	require.NoError(t, d.Check())
	assert.Equal(t, []bool{true, false, false}, d.Blind, "5 pairs of one intent give at best p 0.0625")
	assert.InDelta(t, Spent(0.05, 2.0/3), d.LookAlpha(0.05, 1), 1e-15, "the blind look's share carried")
	assert.InDelta(t, 0.05, d.LookAlpha(0.05, 1)+d.LookAlpha(0.05, 2), 1e-15)
	d.MarkBlind([]int{5, 10, 15}, 1, 0.05, 1)
	assert.Nil(t, d.Blind, "a look passed keeps its α spent")
	d.MarkBlind([]int{4, 8, 12}, 10, 0.05, 0)
	assert.Nil(t, d.Blind, "40 pairs reach α/3 of the first look's level")
	bad := DefaultDesign()
	bad.Blind = []bool{false, false, true}
	assert.Error(t, bad.Check(), "the last look is never blind")
}
