package report

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/pairbench/pairbench"
	"github.com/stretchr/testify/assert"
)

// TestAAFalseLabels simulates A/A runs (both arms identical) of five
// intents with N = 6, 10, 15, 20 and 30 pairs and counts labels that claim
// a difference. Stated bounds: in each family (speed, accuracy) the share
// of runs with any significant intent is at most α = 5% (what Holm
// guarantees), so a run gets any claiming label at most 2α of the time, and
// the observed count of such labels stays below the report's expected
// noise count, which ignores Holm. The bounds allow three standard errors
// of simulation noise.
func TestAAFalseLabels(t *testing.T) {
	const runs = 1000
	sizes := []int{6, 10, 15, 20, 30}
	rng := rand.New(rand.NewPCG(7, 7))
	var labelled, runsWithLabel, runsSpeed, runsAcc, intents int
	var expected float64
	hist := map[pairbench.Label]int{}
	for run := range runs {
		pCorrect := []float64{0.6, 0.9}[run%2]
		var rows []pairbench.Row
		var ids []string
		for k, n := range sizes {
			id := fmt.Sprintf("aa-%d", k)
			ids = append(ids, id)
			for i := range n {
				arm := func() trial {
					tr := trial{outcome: pairbench.Wrong, adopted: true, wall: 60 * math.Exp(rng.NormFloat64()*0.5)}
					if rng.Float64() < pCorrect {
						tr.outcome = pairbench.Correct
					}
					return tr
				}
				rows = append(rows, pairRows(id, i, arm(), arm())...)
			}
		}
		rep := Build(planFor(ids...), rows)
		anyLabel, anySpeed, anyAcc := false, false, false
		for _, in := range rep.Intents {
			intents++
			hist[in.Label]++
			if in.Label.Claims() {
				labelled++
				anyLabel = true
			}
			anySpeed = anySpeed || (in.Speed != nil && in.Speed.Tested && in.Speed.PAdj <= rep.Alpha)
			anyAcc = anyAcc || (in.Accuracy.Tested && in.Accuracy.PAdj <= rep.Alpha)
		}
		expected += rep.Run.Noise.Expected
		for _, c := range []struct {
			hit bool
			n   *int
		}{{anyLabel, &runsWithLabel}, {anySpeed, &runsSpeed}, {anyAcc, &runsAcc}} {
			if c.hit {
				*c.n++
			}
		}
	}
	rate := func(n int) float64 { return float64(n) / runs }
	slack := 3 * math.Sqrt(0.05*0.95/runs)
	t.Logf("labels %v; runs with a false label: %.3f (speed family %.3f, accuracy family %.3f); observed %d vs expected %.1f",
		hist, rate(runsWithLabel), rate(runsSpeed), rate(runsAcc), labelled, expected)
	assert.LessOrEqual(t, rate(runsSpeed), 0.05+slack, "Holm keeps the speed family's error at α")
	assert.LessOrEqual(t, rate(runsAcc), 0.05+slack, "and the accuracy family's")
	assert.LessOrEqual(t, rate(runsWithLabel), 0.10+slack)
	assert.LessOrEqual(t, float64(labelled), expected, "Holm keeps the observed count at or below the unadjusted expectation")
	assert.Positive(t, hist[pairbench.Inconclusive], "N = 6 can rarely reach significance after Holm")
}
