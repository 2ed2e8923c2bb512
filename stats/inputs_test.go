package stats

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestStatisticsDoNotModifyInputs calls every statistic that takes a slice
// and checks the slice is unchanged afterwards.
func TestStatisticsDoNotModifyInputs(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for range 200 {
		n := 1 + r.IntN(30)
		tc, tt, ps, pm := make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
		for i := range n {
			tc[i], tt[i], ps[i], pm[i] = float64(1+r.IntN(9)), float64(1+r.IntN(9)), r.Float64(), r.Float64()/10
		}
		c0, t0, p0, m0 := slices.Clone(tc), slices.Clone(tt), slices.Clone(ps), slices.Clone(pm)
		SignedRank(tc, tt, 0.05)
		NewRankSample(tc)
		Holm(ps)
		AdjustFamily(ps, pm, 0.05)
		sorted := slices.Sorted(slices.Values(ps))
		s0 := slices.Clone(sorted)
		newHolmOthers(sorted, ps[0]).threshold(0.05)
		require.Equal(t, s0, sorted)
		require.Equal(t, c0, tc)
		require.Equal(t, t0, tt)
		require.Equal(t, p0, ps)
		require.Equal(t, m0, pm)
	}
}
