package stats

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestAccuracyNIDecidesClearTables(t *testing.T) {
	// A broken tool: base correct in every pair, head in none.
	pNW, pW := AccuracyNI(0, 10, 10, 0.05)
	assert.Greater(t, pNW, 0.5)
	assert.Less(t, pW, 0.025/2, "shown worse even at α/(2k) for two intents")
	// A refactor: every pair agrees, many pairs.
	pNW, pW = AccuracyNI(0, 0, 100, 0.05)
	assert.Less(t, pNW, 0.05)
	assert.Greater(t, pW, 0.5)
	// Too few pairs to show a 5-point margin: 0.95^20 = 0.36 of tables
	// look perfect with a head 5 points worse.
	pNW, _ = AccuracyNI(0, 0, 20, 0.05)
	assert.Greater(t, pNW, 0.3)
	pNW, pW = AccuracyNI(0, 0, 0, 0.05)
	assert.Equal(t, [2]float64{1, 1}, [2]float64{pNW, pW})
}

// TestAccuracyNIHoldsItsLevelOnTheMargin computes, exactly, the chance
// that each test rejects when head is exactly delta worse, at nuisance
// values between and beyond the grid's points: it never exceeds α.
func TestAccuracyNIHoldsItsLevelOnTheMargin(t *testing.T) {
	const alpha = 0.05
	for _, tc := range []struct {
		n     int
		delta float64
	}{{10, 0.05}, {18, 0.05}, {15, 0.25}, {24, 0.3}} {
		n, delta := tc.n, tc.delta
		type cell struct{ b, c int }
		var rejNW, rejW []cell
		for b := 0; b <= n; b++ {
			for c := 0; b+c <= n; c++ {
				pNW, pW := AccuracyNI(b, c, n, delta)
				if pNW <= alpha {
					rejNW = append(rejNW, cell{b, c})
				}
				if pW <= alpha {
					rejW = append(rejW, cell{b, c})
				}
			}
		}
		size := func(cells []cell, pc float64) float64 {
			pb := pc - delta
			var s float64
			for _, x := range cells {
				s += math.Exp(lnMultinomial(n, x.b, x.c) + xlogy(x.b, pb) + xlogy(x.c, pc) + xlogy(n-x.b-x.c, 1-pb-pc))
			}
			return s
		}
		worst := [2]float64{}
		for i := 0; i <= 997; i++ { // not the grid's points
			pc := delta + ((1+delta)/2-delta)*float64(i)/997
			worst[0] = max(worst[0], size(rejNW, pc))
			worst[1] = max(worst[1], size(rejW, pc))
		}
		t.Logf("n=%d delta=%g: largest size on the margin %.4f (not worse), %.4f (worse)", n, delta, worst[0], worst[1])
		assert.LessOrEqual(t, worst[0], alpha+1e-9, "n=%d delta=%g not worse", n, delta)
		assert.LessOrEqual(t, worst[1], alpha+1e-9, "n=%d delta=%g worse", n, delta)
		assert.NotEmpty(t, rejNW, "the test can reject at n=%d", n)
	}
}

func lnMultinomial(n, b, c int) float64 {
	l := func(k int) float64 { v, _ := math.Lgamma(float64(k + 1)); return v }
	return l(n) - l(b) - l(c) - l(n-b-c)
}

// TestSpeedNIHoldsItsLevelOnTheMargin simulates head exactly at the margin
// (its times base's × 1.1 × symmetric noise): each one-sided test rejects
// at most at α, bar simulation error.
func TestSpeedNIHoldsItsLevelOnTheMargin(t *testing.T) {
	const alpha, reps = 0.05, 4000
	rng := rand.New(rand.NewPCG(7, 30))
	for _, n := range []int{8, 20} {
		null := NullFor(n)
		var nw, w int
		for range reps {
			d := make([]float64, n)
			for i := range d {
				c := 30 * math.Exp(rng.NormFloat64()*0.3)
				tt := c * 1.1 * math.Exp(rng.NormFloat64()*0.15)
				d[i] = LogRatio(c, tt)
			}
			pNW, pW := NewRankSample(d).NI(null, 1.1)
			if pNW <= alpha {
				nw++
			}
			if pW <= alpha {
				w++
			}
		}
		se := math.Sqrt(alpha * (1 - alpha) / reps)
		t.Logf("n=%d: not worse %.4f, worse %.4f (α = %g, se %.4f)", n, float64(nw)/reps, float64(w)/reps, alpha, se)
		assert.LessOrEqual(t, float64(nw)/reps, alpha+3*se)
		assert.LessOrEqual(t, float64(w)/reps, alpha+3*se)
		assert.Greater(t, float64(nw)/reps, alpha/4, "the test is not vacuous at the margin")
	}
	// Identical times are 10% within the margin: shown not worse.
	d := make([]float64, 8)
	pNW, pW := NewRankSample(d).NI(NullFor(8), 1.1)
	assert.Less(t, pNW, 0.01)
	assert.Equal(t, 1.0, pW)
}
