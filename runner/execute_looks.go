package runner

import (
	"context"
	"log/slog"
	"math"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/rundir"
)

// runLooks runs the pairs look by look: every pair of a look, across the
// intents, before any pair of the next (a run of one look runs them all
// at once). A run that is not split takes each look once its pairs are
// done or given up (Looker): a look that stops the run is recorded in
// run.json (Plan.Stop), and the run ends there, the later looks' pairs
// never run. A shard runs its share of every look: it cannot see the
// other shards' rows, so merge takes the looks. pending gives the jobs
// still to run of some pairs after rows; run runs jobs and returns the
// rows they recorded.
func (ex *Execution) runLooks(ctx context.Context, log *slog.Logger, pairs []rundir.PairSpec, rows []pairbench.Row,
	pending func([]rundir.PairSpec, []pairbench.Row) []rundir.Job, run func([]rundir.Job) ([]pairbench.Row, error)) error {
	plan := ex.Plan
	cuts := plan.Looks
	if len(cuts) == 0 || plan.Stop != nil { // the pairs in force, at once
		cuts = []int{math.MaxInt}
	}
	decide := ex.Shards == 0 && plan.Design() != nil && plan.Stop == nil
	log.Info("pairs", "planned", len(pairs), "looks", len(cuts), "slots", ex.Slots)
	for k, upTo := range cuts {
		var look []rundir.PairSpec
		for _, p := range pairs {
			if p.Pair < upTo {
				look = append(look, p)
			}
		}
		if jobs := pending(look, rows); len(jobs) > 0 {
			if len(cuts) > 1 {
				log.Info("look", "look", k+1, "of", len(cuts), "pairs_per_intent", upTo, "pending", len(jobs))
			}
			fresh, err := run(jobs)
			rows = append(rows, fresh...)
			if err != nil {
				return err
			}
		}
		if !decide {
			continue
		}
		l := rundir.NewLooker(plan)
		for i := range rows {
			l.Add(&rows[i])
		}
		stop := l.Decide()
		if stop == nil {
			continue
		}
		plan.Stop = stop
		if err := ex.Dir.WritePlan(plan); err != nil {
			return err
		}
		log.Info("run stopped", "look", stop.Look, "of", len(plan.Looks), "pairs_per_intent", stop.Pairs,
			"stop", stop.Kind, "verdict", stop.Verdict, "reason", stop.Reason)
		return nil
	}
	return ctx.Err()
}
