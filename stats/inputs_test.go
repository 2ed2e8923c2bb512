package stats

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/pairbench/pairbench"
)

// TestAABootstrapCalibration is the regression test for a bootstrap that
// resampled the arms' time lists after the median selection had reordered
// each of them in place, so that its "pairs" were not pairs. Under A/A (both
// arms the same, a per-pair base time shared by the pair) a 95% interval
// should exclude 1 in about 5% of intents; the broken bootstrap did so in
// 15-53%.
func TestAABootstrapCalibration(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	const intents, pairs = 200, 41
	excluded := 0
	for k := range intents {
		var rows []pairbench.Row
		for i := range pairs {
			base := 60 * math.Exp(0.6*r.NormFloat64())
			rows = append(rows, pairRows("aa", i, ok(base*math.Exp(0.3*r.NormFloat64())), ok(base*math.Exp(0.3*r.NormFloat64())))...)
		}
		plan := planFor("aa")
		plan.Seed = uint64(k)
		s := build(plan, rows, 2000).Intents[0].Speed
		if s.Ratio.Lo > 1 || s.Ratio.Hi < 1 {
			excluded++
		}
	}
	rate := float64(excluded) / intents
	t.Logf("A/A: the bootstrap interval excluded 1 in %d of %d intents", excluded, intents)
	assert.LessOrEqual(t, rate, 0.10, "nominal 5%%; 10%% leaves room for simulation noise and the percentile bootstrap's own error")
}

// TestBuildDoesNotModifyRows checks that no statistic changes the rows it is
// given: Build takes them by slice.
func TestBuildDoesNotModifyRows(t *testing.T) {
	specs := manySpecs(6, 40)
	rows := generate(rand.New(rand.NewPCG(3, 4)), specs)
	before := slices.Clone(rows)
	Build(genPlan(specs, 1), rows)
	assert.Equal(t, before, rows)
}

// TestStatisticsDoNotModifyInputs calls every exported statistic that takes
// a slice and checks the slice is unchanged afterwards.
func TestStatisticsDoNotModifyInputs(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for range 200 {
		n := 1 + r.IntN(30)
		tc, tt, ps := make([]float64, n), make([]float64, n), make([]float64, n)
		for i := range n {
			tc[i], tt[i], ps[i] = float64(1+r.IntN(9)), float64(1+r.IntN(9)), r.Float64()
		}
		c0, t0, p0 := slices.Clone(tc), slices.Clone(tt), slices.Clone(ps)
		Typical(tc, tt, 0.05)
		RatioOfMedians(tc, tt, 0.05, 200, rand.New(rand.NewPCG(1, 1)))
		Holm(ps)
		assert.Equal(t, c0, tc)
		assert.Equal(t, t0, tt)
		assert.Equal(t, p0, ps)
	}
}
