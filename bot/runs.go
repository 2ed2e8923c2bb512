package bot

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/pairbench/pairbench/artifacts"
	"github.com/pairbench/pairbench/report"
	"github.com/pairbench/pairbench/rundir"
	"github.com/pairbench/pairbench/state"
)

// workFinish ends a bench its backend says ended: with the verdict of its
// report, or as failed. A bench that already ended (cancelled, superseded)
// is left as it is.
func (b *Bot) workFinish(ctx context.Context, job *river.Job[finishJob]) error {
	var bn state.Bench
	var found bool
	if err := b.state.View(ctx, func(tx *state.Tx) (err error) {
		bn, found, err = tx.Bench(ctx, job.Args.Run)
		return err
	}); err != nil {
		return err
	}
	if !found || bn.Over() {
		b.log.Info("end of a bench ignored: it is over already", "run", job.Args.Run)
		return nil
	}
	to, reason, verdict := state.BenchFailed, job.Args.Reason, ""
	if job.Args.OK {
		rep, err := b.readReport(ctx, RunID(bn.Run))
		switch {
		case errors.Is(err, artifacts.ErrNotExist):
			reason = "The run ended without a report in the artifact store."
		case err != nil && job.Attempt < 5:
			return err // the store may be back soon
		case err != nil:
			reason = "The run ended without a readable report: " + err.Error()
		default:
			to, verdict = state.BenchDone, string(rep.Verdict)
		}
	}
	if to == state.BenchFailed {
		b.log.Warn("bench failed", "run", bn.Run, "reason", reason)
	} else {
		b.log.Info("bench finished", "run", bn.Run, "verdict", verdict)
	}
	return b.state.Update(ctx, func(tx *state.Tx) error { return endBench(ctx, tx, bn.Run, to, reason, verdict) })
}

// readReport reads the report run id published in the store.
func (b *Bot) readReport(ctx context.Context, id RunID) (*report.Report, error) {
	return rundir.ReadStoredReport(ctx, b.cfg.Store, string(id))
}

// workLocalRun runs a bench on this host through the Runner, reporting its
// progress on the check run. Cut short by a shutdown, it goes back in the
// queue and resumes by its run id at the next start; cut short by a cancel,
// it ends quietly (the cancel already ended the bench).
func (b *Bot) workLocalRun(ctx context.Context, job *river.Job[localRunJob]) error {
	var bn state.Bench
	var found bool
	if err := b.state.Update(ctx, func(tx *state.Tx) (err error) {
		if bn, found, err = tx.LockBench(ctx, job.Args.Run); err != nil || !found || bn.Over() {
			return err
		}
		if bn.State == state.BenchQueued {
			bn.State, bn.Dispatched = state.BenchRunning, tx.Now()
			bn.CheckVersion++
			if err := tx.SaveBench(ctx, bn); err != nil {
				return err
			}
			_, err = tx.Enqueue(ctx, checkJob{Run: bn.Run, Version: bn.CheckVersion}, pendingOnce)
		}
		return err
	}); err != nil {
		return err
	}
	if !found || bn.Over() {
		return nil
	}
	if job.Attempt == 1 {
		b.cfg.Metrics.Dispatched(BackendLocal, "ok")
	}
	log := b.log.With("run", bn.Run)
	log.Info("local bench starting", "attempt", job.Attempt)
	// A shutdown stops the bench at once: it resumes at the next start.
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	go func() {
		select {
		case <-b.stopping:
			stop()
		case <-ctx.Done():
		}
	}()
	// The check run shows the bench running now; progress goes there at
	// most once per ProgressEvery, and not before.
	// A look that starts, or stops the run, shows at once: the check run
	// says which.
	lastShown := time.Now()
	progress := newProgressSlot(func(ctx context.Context, p rundir.Progress) {
		now := time.Now()
		var show bool
		err := b.state.Update(ctx, func(tx *state.Tx) error {
			cur, _, err := tx.LockBench(ctx, bn.Run)
			if err != nil || cur.Over() {
				return err
			}
			was := cur
			recordProgress(&cur, p)
			show = p.Done >= p.Pairs || now.Sub(lastShown) >= b.cfg.ProgressEvery ||
				cur.Look != was.Look || cur.StopLook != was.StopLook
			if show {
				cur.CheckVersion++
				if _, err := tx.Enqueue(ctx, checkJob{Run: bn.Run, Version: cur.CheckVersion}, pendingOnce); err != nil {
					return err
				}
			}
			return tx.SaveBench(ctx, cur)
		})
		if err != nil {
			log.Warn("could not record progress", "err", err)
		} else if show {
			lastShown = now
		}
	})
	progressCtx, stopProgress := context.WithCancel(context.WithoutCancel(ctx))
	progressDone := make(chan struct{})
	go func() {
		defer close(progressDone)
		progress.run(progressCtx)
	}()
	runErr := b.cfg.Runner.Run(ctx, request(bn), progress.report)
	stopProgress()
	<-progressDone
	if ctx.Err() != nil {
		var cur state.Bench
		stopCtx := context.WithoutCancel(ctx)
		if err := b.state.View(stopCtx, func(tx *state.Tx) (err error) {
			cur, _, err = tx.Bench(stopCtx, bn.Run)
			return err
		}); err != nil {
			return err
		}
		select {
		case <-b.stopping:
			if !cur.Over() {
				log.Info("local bench interrupted by the shutdown; it resumes at the next start")
				return river.JobSnooze(0)
			}
		default:
		}
		if cur.Over() {
			log.Info("local bench stopped", "state", cur.State)
			return nil
		}
	}
	fin := finishJob{Run: bn.Run, OK: runErr == nil}
	if runErr != nil {
		fin.Reason = failureReason("The run failed: ", runErr)
	}
	return b.state.Update(context.WithoutCancel(ctx), func(tx *state.Tx) error {
		_, err := tx.Enqueue(ctx, fin, pendingOnce)
		return err
	})
}

// recordProgress records in bn what a local bench's runner reported: the
// pairs done of those in force, the look under way in a run of looks, and
// the look that stopped the run before its last, and why.
func recordProgress(bn *state.Bench, p rundir.Progress) {
	bn.DonePairs, bn.TotalPairs = p.Done, p.Pairs
	bn.Look, bn.Looks, bn.PlannedPairs = 0, 0, 0
	if p.Looks > 1 {
		bn.Look, bn.Looks, bn.PlannedPairs = p.Look, p.Looks, p.Planned
	}
	bn.StopLook, bn.StopKind, bn.StopReason = 0, "", ""
	if p.Stop.Early() {
		bn.StopLook, bn.StopKind, bn.StopReason = p.Stop.Look, string(p.Stop.Kind), p.Stop.Reason
	}
}

// workReap ends what nothing else will: a bench not finished RunTimeout
// after it started (its runner or workflow vanished), one that waited
// longer than QueueTimeout to start, a local bench
// whose job ended without ending it, an Actions bench whose run never got
// recorded; and it tries again the check runs and comments whose jobs gave
// up, and forgets deliveries too old to be redelivered.
func (b *Bot) workReap(ctx context.Context, _ *river.Job[reapJob]) error {
	var open []state.Bench
	var checks []state.Bench
	var surfaces []state.Pull
	if err := b.state.View(ctx, func(tx *state.Tx) (err error) {
		if open, err = tx.BenchesIn(ctx, state.BenchQueued, state.BenchRunning); err != nil {
			return err
		}
		if checks, err = tx.UnpostedChecks(ctx); err != nil {
			return err
		}
		surfaces, err = tx.UnpostedSurfaces(ctx)
		return err
	}); err != nil {
		return err
	}
	now := time.Now()
	for _, bn := range open {
		why := ""
		switch {
		case bn.Dispatched.IsZero() && now.Sub(bn.Created) > b.cfg.QueueTimeout:
			why = fmt.Sprintf("The bench waited more than %s in the queue without starting.", b.cfg.QueueTimeout)
		case !bn.Dispatched.IsZero() && now.Sub(bn.Dispatched) > b.cfg.RunTimeout:
			why = fmt.Sprintf("The run vanished: no result %s after it started.", b.cfg.RunTimeout)
		case bn.Backend == BackendLocal && bn.JobID != 0:
			st, err := b.state.JobState(ctx, bn.JobID)
			if errors.Is(err, state.ErrNotFound) || err == nil && finalJobState(st) {
				why = "The local bench's job ended without a result (it was cancelled or gave up)."
			} else if err != nil {
				return err
			}
		}
		if why == "" {
			continue
		}
		b.log.Warn("reaping a bench", "run", bn.Run, "reason", why)
		if err := b.state.Update(ctx, func(tx *state.Tx) error {
			if err := endBench(ctx, tx, bn.Run, state.BenchFailed, why, ""); err != nil {
				return err
			}
			_, err := tx.Enqueue(ctx, cancelJob{Run: bn.Run}, nil)
			return err
		}); err != nil {
			return err
		}
	}
	return b.state.Update(ctx, func(tx *state.Tx) error {
		for _, bn := range checks {
			if _, err := tx.Enqueue(ctx, checkJob{Run: bn.Run, Version: bn.CheckVersion}, pendingOnce); err != nil {
				return err
			}
		}
		for _, p := range surfaces {
			if err := enqueueSurface(ctx, tx, p); err != nil {
				return err
			}
		}
		_, err := tx.ForgetDeliveries(ctx, now.Add(-7*24*time.Hour))
		return err
	})
}

func finalJobState(s rivertype.JobState) bool {
	return s == rivertype.JobStateCompleted || s == rivertype.JobStateCancelled || s == rivertype.JobStateDiscarded
}
