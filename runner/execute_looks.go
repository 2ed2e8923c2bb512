package runner

import (
	"context"
	"log/slog"
	"math"
	"time"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/rundir"
)

// lookRun is what runLooks runs looks with: tally counts some pairs
// after rows (their pending jobs), run runs jobs and returns the rows they
// recorded, follow is told of each look as it starts (its pairs, the rows
// so far, the look and how many there are), and stopped of the look that
// stops the run.
type lookRun struct {
	tally   func([]rundir.PairSpec, []pairbench.Row) *rundir.Tally
	run     func([]rundir.Job) ([]pairbench.Row, error)
	follow  func(look []rundir.PairSpec, rows []pairbench.Row, k, n int)
	stopped func(*rundir.LookStop)
}

// runLooks runs the pairs look by look: every pair of a look, across the
// intents, before any pair of the next (a run of one look runs them all
// at once). A run that is not split takes each look once its pairs are
// done or given up (Looker): a look that stops the run is recorded in
// run.json (Plan.Stop), and the run ends there, the later looks' pairs
// never run. A shard runs its share of every look; with Peers (its shards
// meet in a store) it then waits for the others' rows of the look and takes
// it too (awaitLook; not the last look, which would save no pair),
// stopping where the whole run would: run.json stays
// the planner's, and merge finds the same stop from the rows. A shard
// that cannot see the others, or waits for them in vain, runs its share of
// every look, and merge takes the looks.
func (ex *Execution) runLooks(ctx context.Context, log *slog.Logger, pairs []rundir.PairSpec, rows []pairbench.Row, lr lookRun) error {
	plan := ex.Plan
	cuts := plan.Looks
	if len(cuts) == 0 || plan.Stop != nil { // the pairs in force, at once
		cuts = []int{math.MaxInt}
	}
	decide := plan.Design() != nil && plan.Stop == nil && (ex.Shards == 0 || ex.Peers != nil)
	log.Info("pairs", "planned", len(pairs), "looks", len(cuts), "slots", ex.Slots)
	for k, upTo := range cuts {
		var look []rundir.PairSpec
		for _, p := range pairs {
			if p.Pair < upTo {
				look = append(look, p)
			}
		}
		began := time.Now()
		at, of := k+1, len(cuts)
		if plan.Stop != nil && len(plan.Looks) > 0 { // resumed where it stopped
			at, of = plan.Stop.Look, len(plan.Looks)
		}
		lr.follow(look, rows, at, of)
		if jobs := lr.tally(look, rows).Pending(); len(jobs) > 0 {
			if len(cuts) > 1 {
				log.Info("look", "look", k+1, "of", len(cuts), "pairs_per_intent", upTo, "pending", len(jobs))
			}
			fresh, err := lr.run(jobs)
			rows = append(rows, fresh...)
			if err != nil {
				return err
			}
		}
		if !decide {
			continue
		}
		if ex.Shards > 0 {
			if k == len(cuts)-1 {
				break // the last look saves no pair: merge takes it
			}
			stop, err := ex.awaitLook(ctx, log, k, rows, time.Since(began))
			if err != nil {
				return err
			}
			if stop != nil {
				lr.stopped(stop)
				log.Info("run stopped", "look", stop.Look, "of", len(plan.Looks), "pairs_per_intent", stop.Pairs,
					"stop", stop.Kind, "verdict", stop.Verdict, "reason", stop.Reason, "shard", ex.Shard, "decided_from", "every shard's rows")
				return nil
			}
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
		lr.stopped(stop)
		log.Info("run stopped", "look", stop.Look, "of", len(plan.Looks), "pairs_per_intent", stop.Pairs,
			"stop", stop.Kind, "verdict", stop.Verdict, "reason", stop.Reason)
		return nil
	}
	return ctx.Err()
}

// The bounds of a shard's wait at a look for the other shards' rows: as
// long as its own share of the look took, within these.
const (
	minLookWait = time.Minute
	maxLookWait = 30 * time.Minute
	// lookPoll is how often a waiting shard reads the others' rows.
	lookPoll = 5 * time.Second
)

// awaitLook takes look k (from 0) of a shard: it reads the other shards'
// rows (Peers) until, with its own rows, the look's pairs are all done or
// given up, and returns the look's stop (nil: the run goes on). It waits
// as long as its own share of the look took (took), within minLookWait
// and maxLookWait; past that it goes on without taking the look, which
// merge then takes (a look not taken never stops a run early, so the
// design stays valid). A read of the others' rows that fails (a store
// that blips) is tried again at the next poll, within the same wait: only
// a wait that ends without a read that decides the look gives it up.
func (ex *Execution) awaitLook(ctx context.Context, log *slog.Logger, k int, own []pairbench.Row, took time.Duration) (*rundir.LookStop, error) {
	wait, poll := min(max(took, minLookWait), maxLookWait), lookPoll
	if ex.lookWait > 0 {
		wait, poll = ex.lookWait, ex.lookWait/20
	}
	deadline := time.Now().Add(wait)
	failed := 0 // reads of the others' rows that failed
	for {
		peers, err := ex.Peers(ctx)
		switch {
		case err != nil && ctx.Err() != nil:
			return nil, ctx.Err()
		case err != nil:
			if failed == 0 {
				log.Warn("look: the other shards' rows could not be read; trying again while the wait lasts", "look", k+1, "err", err)
			}
			failed++
		default:
			l := rundir.NewLooker(ex.Plan)
			for i := range own {
				l.Add(&own[i])
			}
			judge := rundir.NewPlanRows(ex.Plan) // it keeps a trial once: anew at each read
			for i := range peers {
				if r := &peers[i]; judge.Keep(r) {
					l.Add(r)
				}
			}
			if stop := l.Decide(); stop != nil || l.Finished(k) {
				return stop, nil
			}
		}
		if time.Now().After(deadline) {
			if err != nil {
				log.Warn("look: the other shards' rows could not be read before the wait ended; going on, merge takes the look",
					"look", k+1, "waited", wait.Round(time.Second), "failed_reads", failed, "err", err)
			} else {
				log.Info("look: the other shards have not finished it; going on, merge takes the look", "look", k+1, "waited", wait.Round(time.Second))
			}
			return nil, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(poll):
		}
	}
}
