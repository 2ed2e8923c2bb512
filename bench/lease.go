package bench

import (
	"context"
	"time"

	"github.com/pairbench/pairbench/rundir"
)

// takeLease takes the run's (this shard's) lease in the store, so that no
// other runner runs it at the same time (rundir.AcquireLease), and keeps it
// renewed until Close releases it. A lease lost to another runner is told
// on r.leaseLost.
func (r *Run) takeLease(ctx context.Context) error {
	l, err := rundir.AcquireLease(ctx, r.store, r.cfg.RunID, r.cfg.Shard, rundir.LeaseHolder(), time.Now)
	if err != nil || l == nil {
		return err
	}
	if l.TookOver != "" {
		r.log.Warn("took the run's lease over: its holder stopped renewing it", "holder", l.TookOver, "run_id", r.cfg.RunID)
	}
	r.leaseLost = make(chan error, 1)
	keep, stop := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		l.Keep(keep, func(err error) {
			r.log.Error("lost the run's lease to another runner; stopping", "run_id", r.cfg.RunID, "err", err)
			r.leaseLost <- err
		})
	}()
	r.onClose(func() error {
		stop()
		<-done
		release, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := l.Release(release); err != nil {
			// It goes stale by itself; the next runner of this host takes
			// it at once.
			r.log.Warn("could not release the run's lease", "run_id", r.cfg.RunID, "err", err)
		}
		return nil
	})
	return nil
}

// stopOnLostLease cancels the bench's context with the lease's loss, if it
// is lost before ctx ends.
func (r *Run) stopOnLostLease(ctx context.Context, cancel context.CancelCauseFunc) {
	if r.leaseLost == nil {
		return
	}
	go func() {
		select {
		case err := <-r.leaseLost:
			cancel(err)
		case <-ctx.Done():
		}
	}()
}
