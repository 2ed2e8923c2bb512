package stats

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestVanElterenOneStratumIsTheSignedRankTest: with one stratum of untied
// pairs the stratified test is the exact signed-rank test.
func TestVanElterenOneStratumIsTheSignedRankTest(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	for range 300 {
		n := 1 + rng.IntN(40)
		tc, tt := make([]float64, n), make([]float64, n)
		d := make([]float64, n)
		for i := range n {
			tc[i], tt[i] = 10+rng.Float64()*20, 10+rng.Float64()*20
			d[i] = LogRatio(tc[i], tt[i])
		}
		iv, p := SignedRank(tc, tt, 0.05)
		got := VanElteren([][]float64{d})
		require.InDelta(t, p, got.P, 1e-12*max(1, p), "n = %d", n)
		if p <= 0.05 {
			assert.Equal(t, iv.Est > 1, got.Faster, "direction of a significant test")
		}
		assert.InDelta(t, MinSignP(n), got.PMin, 1e-15)
	}
}

// TestVanElterenExactMatchesApproximation checks the lattice computation
// against the Edgeworth approximation where both apply (many pairs), and
// the approximation's continuity correction keeps it from being liberal.
func TestVanElterenExactMatchesApproximation(t *testing.T) {
	rng := rand.New(rand.NewPCG(6, 6))
	for range 50 {
		var strata [][]float64
		var weights []float64
		for k := range 6 {
			n := 25 + k%2
			d := make([]float64, n)
			for i := range d {
				d[i] = rng.NormFloat64() + 0.3
				weights = append(weights, float64(i+1)/float64(n+1))
			}
			strata = append(strata, d)
		}
		exact := VanElteren(strata)
		// The same statistic through the approximation.
		v := 0.0
		for _, d := range strata {
			n := len(d)
			sorted := append([]float64(nil), d...)
			for _, x := range d {
				if x > 0 {
					r := 0
					for _, y := range sorted {
						if math.Abs(y) <= math.Abs(x) {
							r++
						}
					}
					v += float64(r) / float64(n+1)
				}
			}
		}
		approx := newWeightedNull(weights).p(v)
		assert.InDelta(t, exact.P, approx, 0.002+0.05*exact.P, "exact %g approx %g", exact.P, approx)
	}
}
