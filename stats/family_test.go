package stats

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAdjustFamilyThresholdAgreesWithHolm(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for trial := range 3000 {
		m := 1 + r.IntN(12)
		ps, pmin := make([]float64, m), make([]float64, m)
		for i := range ps {
			// Discrete values so that ties and exact multiples of α/k occur.
			ps[i] = []float64{0.05 / 3, 0.0125, 0.05, 0.001, 0.5, 1, r.Float64() * 0.1}[r.IntN(7)]
			pmin[i] = min(ps[i], []float64{0.0001, 0.03125, 0.0625, 1}[r.IntN(4)])
		}
		alpha := []float64{0.05, 0.1}[trial%2]
		res := AdjustFamily(ps, pmin, alpha)
		var sel []float64
		for i, f := range res {
			if f.Tested {
				sel = append(sel, ps[i])
			}
		}
		holm := Holm(sel)
		j := 0
		for i, f := range res {
			if !f.Tested {
				assert.Equal(t, FamilyResult{Adj: 1, Best: 1}, f)
				continue
			}
			require.Equal(t, holm[j], f.Adj, "the family's own Holm")
			require.Equal(t, f.Adj <= alpha, ps[i] <= f.Threshold, "ps=%v pmin=%v i=%d %+v", ps, pmin, i, f)
			require.LessOrEqual(t, f.Threshold, alpha)
			// Lowering p to the threshold keeps it significant; one float
			// above is not.
			alt := append([]float64(nil), sel...)
			if f.Threshold > 0 {
				alt[j] = f.Threshold
				require.LessOrEqual(t, Holm(alt)[j], alpha)
			}
			if f.Threshold < 1 {
				alt[j] = math.Nextafter(f.Threshold, 2)
				require.Greater(t, Holm(alt)[j], alpha)
			}
			j++
		}
	}
}

func TestTaroneSelection(t *testing.T) {
	// Ten intents with 30 pairs (attainable p ~1e-9) and ten with 6
	// (0.03125): the six-pair ones could never beat 0.05/10, so Holm runs
	// over the ten that can.
	var pmin []float64
	for i := range 20 {
		pmin = append(pmin, []float64{1.9e-9, 0.03125}[i%2])
	}
	assert.Equal(t, 10, taroneK(pmin, 0.05))
	res := AdjustFamily(pmin, pmin, 0.05)
	for i, f := range res {
		assert.Equal(t, i%2 == 0, f.Tested, "intent %d", i)
	}
	assert.Equal(t, 1, taroneK([]float64{1, 1}, 0.05), "nothing can reach α")
	assert.Equal(t, 3, taroneK([]float64{0.001, 0.001, 0.001}, 0.05))
}
