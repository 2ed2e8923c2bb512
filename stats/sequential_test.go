package stats

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
