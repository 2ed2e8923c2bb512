package bench

import (
	"fmt"

	"github.com/pairbench/pairbench/rundir"

	"github.com/pairbench/pairbench/intents"
	"github.com/pairbench/pairbench/runner"
	"github.com/pairbench/pairbench/stats"
)

// UnreachablePlanError refuses a plan whose pairs can reach no label, not
// the run's verdict nor any intent's (stats.CheckPlan), before the first
// trial: running it would spend everything for "inconclusive".
type UnreachablePlanError struct {
	Check stats.PlanCheck
	// Needed is the fewest pairs per intent that make the run's verdict
	// attainable.
	Needed int
}

func (e *UnreachablePlanError) Error() string {
	return fmt.Sprintf("this plan can reach no label: %d %s per intent over %d benched %s (%s); it needs at least %d pairs per intent (--pairs %d, or --pairs auto), or run it anyway with --allow-inconclusive",
		e.Check.Pairs, plural(e.Check.Pairs, "pair", "pairs"), e.Check.Intents, plural(e.Check.Intents, "intent", "intents"), e.Check.Text(), e.Needed, e.Needed)
}

// planPairs finishes a new plan's pairs: with PairsAuto it replans with the
// fewest pairs that detect the configured effect; then it logs what the
// plan can show and, with RefuseUnreachable, refuses one that can reach no
// label.
func (r *Run) planPairs(reg *intents.Registry, opts runner.PlanOptions, plan *rundir.Plan) (*rundir.Plan, error) {
	benched := 0
	for _, in := range plan.Intents {
		if !in.Placebo {
			benched++
		}
	}
	design := opts.Design
	if benched == 0 {
		design = nil // a run of placebo intents alone takes no looks (runner.NewPlan)
	}
	benched = max(1, benched) // and is planned as one intent's

	alpha := opts.Alpha
	if !(alpha > 0 && alpha < 1) {
		alpha = stats.DefaultAlpha
	}
	// What a run can reach is decided at its last look, at the share of
	// α its looks leave it (rundir.LastLookAlpha; alpha for one look).
	level := func(pairs int) float64 { return rundir.LastLookAlpha(design, pairs, benched, alpha) }
	if r.cfg.PairsAuto {
		n, err := stats.AutoPairsAt(benched, level, r.cfg.Effect)
		if err != nil {
			return nil, fmt.Errorf("--pairs auto: %w", err)
		}
		r.log.Info("pairs auto", "effect", r.cfg.Effect.String(), "intents", benched, "pairs", n)
		opts.Pairs = n
		if plan, _, err = runner.NewPlan(reg, opts); err != nil {
			return nil, err
		}
	}
	check := stats.CheckPlan(benched, opts.Pairs, level(opts.Pairs))
	r.log.Info("plan", "pairs", opts.Pairs, "intents", benched, "looks", plan.Looks, "reach", check.Text())
	if !check.Reachable() && r.cfg.RefuseUnreachable {
		return nil, &UnreachablePlanError{Check: check, Needed: stats.PairsForVerdictAt(benched, level)}
	}
	return plan, nil
}
