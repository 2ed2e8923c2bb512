package stats

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench"
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
		null := nullFor(n)
		var nw, w int
		for range reps {
			d := make([]float64, n)
			for i := range d {
				c := 30 * math.Exp(rng.NormFloat64()*0.3)
				tt := c * 1.1 * math.Exp(rng.NormFloat64()*0.15)
				d[i] = logRatio(c, tt)
			}
			pNW, pW := newRankSample(d).ni(null, 1.1)
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
	pNW, pW := newRankSample(d).ni(nullFor(8), 1.1)
	assert.Less(t, pNW, 0.01)
	assert.Equal(t, 1.0, pW)
}

// armsPlan is a head-against-base plan of k intents with default margins.
func armsPlan(k, pairs int) Plan {
	p := Plan{RunID: "t", Alpha: 0.05, Margins: &DefaultMargins, Arms: &Arms{
		Control:   ArmName{Spec: "tools@main", Name: "main@1a2b3c4's tools", Tools: true},
		Treatment: ArmName{Spec: "tools", Name: "this PR's tools (5d6e7f8)", Tools: true}}}
	for i := range k {
		p.Intents = append(p.Intents, PlanIntent{ID: fmt.Sprintf("i%d", i), Domain: "books.example", Class: pairbench.AnswerPinned, Pairs: pairs})
	}
	return p
}

// TestCalibrationIdenticalArms: over many simulated runs whose base and
// head are identical (same chance of a correct answer, same time
// distribution), a run gets a label that claims a difference, or a
// "worse", at most at α, bar simulation error.
func TestCalibrationIdenticalArms(t *testing.T) {
	if testing.Short() {
		t.Skip("simulation: a few seconds")
	}
	const alpha, runs, k, pairs = 0.05, 800, 2, 20
	rng := rand.New(rand.NewPCG(30, 31))
	var labelled, worse, notWorse int
	for range runs {
		var rows []pairbench.Row
		for i := range k {
			for p := range pairs {
				draw := func() trial {
					wall := 40 * math.Exp(rng.NormFloat64()*0.25)
					if rng.Float64() < 0.85 {
						return ok(wall)
					}
					return wrong(wall)
				}
				rows = append(rows, pairRows(fmt.Sprintf("i%d", i), p, draw(), draw())...)
			}
		}
		rep := Build(armsPlan(k, pairs), rows)
		if slicesAny(rep.Intents, func(in Intent) bool { return in.Label.Claims() }) {
			labelled++
		}
		switch rep.NonInferiority {
		case Worse:
			worse++
		case NotWorse:
			notWorse++
		}
	}
	se := math.Sqrt(alpha * (1 - alpha) / runs)
	t.Logf("identical arms, %d runs of %d intents × %d pairs: a label in %.4f, worse in %.4f, not worse in %.4f (se %.4f)",
		runs, k, pairs, float64(labelled)/runs, float64(worse)/runs, float64(notWorse)/runs, se)
	assert.LessOrEqual(t, float64(labelled)/runs, alpha+3*se, "false labels")
	assert.LessOrEqual(t, float64(worse)/runs, alpha+3*se, "false worse")
}

func slicesAny[T any](s []T, f func(T) bool) bool {
	for _, v := range s {
		if f(v) {
			return true
		}
	}
	return false
}

// TestBuildGivesHeadAgainstBaseItsVerdict: a broken head is worse, a
// refactor with enough pairs not worse, and the report names the arms and
// counts each tool's calls per arm.
func TestBuildGivesHeadAgainstBaseItsVerdict(t *testing.T) {
	plan := armsPlan(1, 12)
	var broken []pairbench.Row
	for p := range 12 {
		broken = append(broken, pairRows("i0", p, ok(30), wrong(31))...)
	}
	rep := Build(plan, broken)
	require.NotNil(t, rep.Intents[0].NonInferiority)
	assert.Equal(t, pairbench.LessAccurate, rep.Intents[0].Label)
	assert.Equal(t, Worse, rep.Intents[0].NonInferiority.Result, rep.Intents[0].NonInferiority.Why)
	assert.Equal(t, Worse, rep.NonInferiority)
	assert.Equal(t, "main@1a2b3c4's tools", rep.Arms.Control.Name)

	plan = armsPlan(1, 80)
	var refactor []pairbench.Row
	for p := range 80 {
		c, tt := ok(30+float64(p%7)), ok(30+float64((p+3)%7))
		refactor = append(refactor, pairRows("i0", p, c, tt)...)
	}
	rep = Build(plan, refactor)
	assert.Equal(t, NotWorse, rep.Intents[0].NonInferiority.Result, rep.Intents[0].NonInferiority.Why)

	plan = armsPlan(1, 10)
	rep = Build(plan, refactor[:20])
	assert.Equal(t, NIInconclusive, rep.Intents[0].NonInferiority.Result, "10 pairs cannot show a 5-point margin")
	assert.Contains(t, rep.Intents[0].NonInferiority.Why, "accuracy within 5 points")

	plan.Margins = nil
	assert.Nil(t, Build(plan, refactor[:20]).Intents[0].NonInferiority, "no margins, no verdict")
}
