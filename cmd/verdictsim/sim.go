package main

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/report"
	"github.com/pairbench/pairbench/stats"
)

// scenario describes simulated runs: every intent alike.
type scenario struct {
	intents, pairs int
	// pc and pt are each arm's chance of a correct answer.
	pc, pt float64
	// speedup is control's time over treatment's (1: no difference).
	speedup float64
	// struggle couples failure to slowness: a trial's latent struggle makes
	// it slower and, above its arm's threshold, wrong, so the more accurate
	// arm keeps slower trials among its correct ones (the bias of speed over
	// both-correct pairs). Without it, correctness is independent of time.
	struggle bool
}

// Times: a pair's two trials share a base (lognormal, median 20 s, σ 0.5)
// and each adds its own lognormal noise (σ 0.3), the power table's model.
const (
	baseSigma  = 0.5
	noiseSigma = 0.3
	// struggleSigma is how much a trial's struggle (a standard normal)
	// slows it, in log time, under scenario.struggle.
	struggleSigma = 0.5
)

// run simulates one run of sc and returns its plan and rows.
func (sc scenario) run(rng *rand.Rand) (report.Plan, []pairbench.Row) {
	plan := report.Plan{RunID: "sim", Model: report.Model{Name: "sim"}}
	rows := make([]pairbench.Row, 0, 2*sc.intents*sc.pairs)
	// The struggle thresholds: the standard normal quantiles of pc and pt
	// (stats.Z(a) is the quantile 1 − a/2).
	qc, qt := stats.Z(2*(1-sc.pc)), stats.Z(2*(1-sc.pt))
	for k := range sc.intents {
		id := fmt.Sprintf("intent-%02d", k)
		plan.Intents = append(plan.Intents, report.PlanIntent{ID: id, Domain: "sim.example", Class: pairbench.AnswerPinned, Pairs: sc.pairs, Tools: []string{"t"}})
		for p := range sc.pairs {
			order := pairbench.AB
			if p%2 == 1 {
				order = pairbench.BA
			}
			base := 20 * math.Exp(baseSigma*rng.NormFloat64())
			for _, arm := range order.Arms() {
				prob, q, wall := sc.pc, qc, base*sc.speedup
				if arm == pairbench.Treatment {
					prob, q, wall = sc.pt, qt, base
				}
				wall *= math.Exp(noiseSigma * rng.NormFloat64())
				correct := rng.Float64() < prob
				if sc.struggle {
					z := rng.NormFloat64()
					correct = z < q
					wall *= math.Exp(struggleSigma * z)
				}
				r := pairbench.Row{
					V: pairbench.RowVersion, RunID: "sim", Intent: id, Domain: "sim.example",
					Stage: pairbench.StagePair, Pair: p, Order: order, Arm: arm, Attempt: 1,
					Outcome: pairbench.Wrong, WallSeconds: wall, Turns: 5, CostUSD: 0.01,
					Adopted: arm == pairbench.Treatment,
				}
				if correct {
					r.Outcome = pairbench.Correct
				}
				rows = append(rows, r)
			}
		}
	}
	return plan, rows
}

// claims reports whether a report claims any difference: its verdict or
// any benched intent's label.
func claims(rep *report.Report) bool {
	if claiming(rep.Verdict) {
		return true
	}
	for _, in := range rep.Intents {
		if !in.Placebo && claiming(in.Label) {
			return true
		}
	}
	return false
}

// claiming reports whether a label claims a difference between the arms.
func claiming(l pairbench.Label) bool {
	switch l {
	case pairbench.Faster, pairbench.Slower, pairbench.MoreAccurate, pairbench.LessAccurate, pairbench.Better, pairbench.Mixed:
		return true
	}
	return false
}

// rate runs sc reps times with the given seed and returns the share of
// runs for which hit holds.
func rate(sc scenario, reps int, seed uint64, hit func(*report.Report) bool) float64 {
	rng := rand.New(rand.NewPCG(seed, uint64(sc.intents)<<20|uint64(sc.pairs)))
	n := 0
	for range reps {
		plan, rows := sc.run(rng)
		if hit(report.Build(plan, rows)) {
			n++
		}
	}
	return float64(n) / float64(reps)
}
