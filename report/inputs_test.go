package report

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/pairbench/pairbench"
)

// TestAACalibration runs A/A experiments (both arms the same: each pair
// shares a base time, each trial adds its own lognormal noise, one trial in
// twenty is stuck four times as long, times are rounded to 0.1 s so that
// ties occur, and both arms are correct with the same chance) through
// Build and counts how often each interval the report prints excludes no
// difference. The 95% speedup and discordant-share intervals should do so
// in at most 5% of intents, the Holm-level ones in at most 5% of runs (for
// either family), and the Wilson interval of each arm should cover the true
// rate. The bounds allow three standard errors of simulation noise. It is
// also the regression test for a bootstrap that resampled the arms' time
// lists after the median selection had reordered each of them in place: its
// interval excluded 1 in 13% of intents here.
func TestAACalibration(t *testing.T) {
	const runs, perRun, pairs = 400, 5, 30
	r := rand.New(rand.NewPCG(1, 2))
	var speedEx, shareEx, speedN, shareN, runSpeedEx, runShareEx, covered, arms int
	for run := range runs {
		pCorrect := []float64{0.6, 0.85}[run%2]
		var rows []pairbench.Row
		var ids []string
		for k := range perRun {
			id := fmt.Sprintf("aa-%d", k)
			ids = append(ids, id)
			for i := range pairs {
				base := 60 * math.Exp(0.6*r.NormFloat64())
				arm := func() trial {
					wall := base * math.Exp(0.3*r.NormFloat64())
					if r.IntN(20) == 0 {
						wall *= 4
					}
					tr := trial{outcome: pairbench.Wrong, adopted: true, wall: math.Round(wall*10) / 10}
					if r.Float64() < pCorrect {
						tr.outcome = pairbench.Correct
					}
					return tr
				}
				rows = append(rows, pairRows(id, i, arm(), arm())...)
			}
		}
		rep := Build(planFor(ids...), rows)
		anySpeed, anyShare := false, false
		for _, in := range rep.Intents {
			for _, a := range []ArmStats{in.Control, in.Treatment} {
				arms++
				if a.Rate.Lo <= pCorrect && pCorrect <= a.Rate.Hi {
					covered++
				}
			}
			if s := in.Speed; s != nil && !s.Speedup.TooFew {
				speedN++
				if !s.Speedup.Contains(1) {
					speedEx++
				}
				anySpeed = anySpeed || !s.SpeedupAdj.Contains(1)
			}
			if acc := in.Accuracy; !acc.Share.TooFew {
				shareN++
				if !acc.Share.Contains(0.5) {
					shareEx++
				}
				anyShare = anyShare || !acc.ShareAdj.Contains(0.5)
			}
		}
		if anySpeed {
			runSpeedEx++
		}
		if anyShare {
			runShareEx++
		}
	}
	rate := func(x, n int) float64 { return float64(x) / float64(n) }
	t.Logf("speedup: excluded 1 in %d of %d intents; Holm level: in %d of %d runs", speedEx, speedN, runSpeedEx, runs)
	t.Logf("share: excluded ½ in %d of %d intents; Holm level: in %d of %d runs", shareEx, shareN, runShareEx, runs)
	t.Logf("Wilson: covered the true rate in %d of %d arms", covered, arms)
	bound := func(n int) float64 { return 0.05 + 3*math.Sqrt(0.05*0.95/float64(n)) }
	assert.LessOrEqual(t, rate(speedEx, speedN), bound(speedN))
	assert.LessOrEqual(t, rate(shareEx, shareN), bound(shareN))
	assert.LessOrEqual(t, rate(runSpeedEx, runs), bound(runs))
	assert.LessOrEqual(t, rate(runShareEx, runs), bound(runs))
	assert.GreaterOrEqual(t, rate(covered, arms), 0.93, "Wilson at 30 trials, rates 0.6 and 0.85")
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
