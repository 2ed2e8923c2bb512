package stats

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestScoreDiffAgreesWithItsInterval: the interval holds 0 exactly when
// p > alpha, on scores with many ties, as the judge's few levels give.
func TestScoreDiffAgreesWithItsInterval(t *testing.T) {
	rng := rand.New(rand.NewPCG(35, 1))
	levels := []float64{0, 1.0 / 3, 2.0 / 3, 1}
	for range 500 {
		n := 1 + rng.IntN(30)
		sc, st := make([]float64, n), make([]float64, n)
		for i := range n {
			sc[i], st[i] = levels[rng.IntN(4)], levels[rng.IntN(4)]
		}
		iv, p := ScoreDiff(sc, st, 0.05)
		require.Equal(t, p > 0.05, iv.Contains(0), "n=%d p=%v %+v", n, p, iv)
		if !iv.TooFew {
			assert.True(t, iv.Contains(iv.Est) || iv.Lo == iv.Hi, "%+v", iv)
		}
	}
}

// TestScoreTestAACalibration: A/A by simulation. Both arms' scores come
// from one distribution (a judge's few levels, many ties and zeros, as
// judged trials give), so every claim is false: at alpha 0.05 the exact
// test claims a difference in at most 5% of runs (within Monte Carlo
// error), at every number of pairs, and the interval covers no difference
// as often.
func TestScoreTestAACalibration(t *testing.T) {
	rng := rand.New(rand.NewPCG(35, 2))
	levels := []float64{0, 0, 1.0 / 3, 2.0 / 3, 2.0 / 3, 1, 1, 1}
	draws := map[string]func() float64{
		"judge levels": func() float64 { return levels[rng.IntN(len(levels))] },
		"continuous":   rng.Float64,
	}
	const runs = 2000
	for _, name := range []string{"judge levels", "continuous"} {
		draw := draws[name]
		for _, n := range []int{6, 10, 20, 40} {
			claims := 0
			for range runs {
				sc, st := make([]float64, n), make([]float64, n)
				for i := range n {
					sc[i], st[i] = draw(), draw()
				}
				iv, p := ScoreDiff(sc, st, 0.05)
				if p <= 0.05 {
					claims++
					assert.False(t, iv.Contains(0))
				}
			}
			rate := float64(claims) / runs
			// 3 standard errors above alpha bounds a calibrated test's rate.
			assert.LessOrEqual(t, rate, 0.05+3*math.Sqrt(0.05*0.95/runs), "%s, %d pairs: false claims", name, n)
			t.Logf("%s, %d pairs: %d of %d A/A runs claimed a difference (%.3f)", name, n, claims, runs, rate)
		}
	}
}
