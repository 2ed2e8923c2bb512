package report

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/pairbench/pairbench"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

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
