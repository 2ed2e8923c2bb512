package report

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/pairbench/pairbench"
)

// genSpec describes one intent of a generated run.
type genSpec struct {
	id, domain string
	pairs      int
	// pc and pt are each arm's chance of a correct answer; speedup scales
	// control's wall time over treatment's; adopt is treatment's chance of
	// invoking a tool.
	pc, pt, speedup, adopt float64
}

// generate makes the rows of a run: every pair's control and treatment
// trial, AB and BA alternating, with lognormal wall times.
func generate(rng *rand.Rand, specs []genSpec) []pairbench.Row {
	n := 0
	for _, s := range specs {
		n += 2 * s.pairs
	}
	rows := make([]pairbench.Row, 0, n)
	for _, s := range specs {
		for p := range s.pairs {
			order := pairbench.AB
			if p%2 == 1 {
				order = pairbench.BA
			}
			base := 60 * math.Exp(rng.NormFloat64()*0.4)
			for _, arm := range order.Arms() {
				r := pairbench.Row{
					V: pairbench.RowVersion, RunID: "gen", Intent: s.id, Domain: s.domain,
					Stage: pairbench.StagePair, Pair: p, Order: order, Arm: arm, Attempt: 1,
					Outcome: pairbench.Wrong, Turns: 5 + rng.IntN(10), InputTokens: 10_000,
					CostUSD: 0.01, StartDelayMS: 10_000,
				}
				prob, wall := s.pc, base*s.speedup
				if arm == pairbench.Treatment {
					prob, wall = s.pt, base
					r.Adopted = rng.Float64() < s.adopt
				}
				if rng.Float64() < prob {
					r.Outcome = pairbench.Correct
				}
				r.WallSeconds = wall * math.Exp(rng.NormFloat64()*0.2)
				rows = append(rows, r)
			}
		}
	}
	return rows
}

// genPlan is the plan matching specs.
func genPlan(specs []genSpec, seed uint64) Plan {
	plan := Plan{RunID: "gen", Model: Model{Name: "gen"}, Seed: seed}
	for _, s := range specs {
		plan.Intents = append(plan.Intents, PlanIntent{ID: s.id, Domain: s.domain, Class: pairbench.AnswerPinned, Pairs: s.pairs, Tools: []string{"tool"}})
	}
	return plan
}

func manySpecs(intents, pairs int) []genSpec {
	specs := make([]genSpec, intents)
	for i := range specs {
		specs[i] = genSpec{
			id: fmt.Sprintf("intent-%04d", i), domain: fmt.Sprintf("d%d.example", i%5), pairs: pairs,
			pc: 0.8, pt: 0.8 + 0.1*float64(i%3-1), speedup: 1 + 0.1*float64(i%4), adopt: 0.9,
		}
	}
	return specs
}
