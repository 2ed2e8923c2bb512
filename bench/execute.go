package bench

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/pairbench/pairbench/rundir"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/runner"
)

// Execute runs every pending trial of this runner's share of the run (the
// adoption stage first, then every pair lacking a scored trial in either
// arm), uploading the run to the store after every row and once at the
// end, whatever the outcome. It returns ctx's error when interrupted,
// runner.ErrTooManyAborts when trials keep aborting, or a fault that
// stopped the run. Call Smoke first.
func (r *Run) Execute(ctx context.Context) error {
	if !r.smoked {
		return errors.New("bench: Execute before Smoke")
	}
	// The warm-up fills the Node compile cache every trial's agent reads;
	// without it trials still run, each compiling pi and Playwright MCP
	// afresh.
	r.step(Step{Name: StepWarmUp})
	if err := r.agent.Warm(ctx, r.trials.BrowserMCP("ws://127.0.0.1:9/warm-up")); err != nil {
		r.problem(rundir.Problem{Msg: "agent warm-up failed; trials run without a compile cache", Attrs: []any{"err", err}})
	}
	r.step(Step{Name: StepWarmedUp})
	up := r.startUploads(ctx)
	ex := r.execution()
	var err error
	if ex.OtherSpend, err = r.dir.ReadSpend(r.cfg.Shard); err != nil {
		up.stop()
		return err
	}
	ex.OnRow = func(row pairbench.Row) {
		r.log.Info("trial", "intent", row.Intent, "pair", row.Pair, "arm", row.Arm, "attempt", row.Attempt,
			"outcome", row.Outcome, "reason", row.Reason, "seconds", fmt.Sprintf("%.1f", row.WallSeconds), "turns", row.Turns)
		if r.cfg.Hooks.Row != nil {
			r.cfg.Hooks.Row(row)
		}
		r.step(Step{Name: StepRow, Trial: &runner.TrialSpec{Job: jobOf(row), Arm: row.Arm, Dir: row.TrialDir}})
		up.kick()
	}
	ex.OnTrialEnd = func(spec runner.TrialSpec, _ pairbench.Row) { r.step(Step{Name: StepTrialEnd, Trial: &spec}) }
	if r.trials != nil {
		r.trials.OnAgent = func(spec runner.TrialSpec) { r.step(Step{Name: StepAgent, Trial: &spec}) }
	}
	err = ex.Run(ctx)
	up.stop()
	return err
}

// jobOf is the job a row records an attempt of.
func jobOf(row pairbench.Row) rundir.Job {
	return rundir.Job{Intent: row.Intent, Domain: row.Domain, Stage: row.Stage, Pair: row.Pair, Order: row.Order, Attempt: row.Attempt}
}

// execution is this runner's share of the run.
func (r *Run) execution() *runner.Execution {
	adoption := r.cfg.Adoption
	if r.plan.Trial != nil {
		adoption = r.plan.Trial.Adoption
	}
	ex := &runner.Execution{Dir: r.dir, Plan: r.plan, Slots: r.cfg.Slots, Shard: r.cfg.Shard, Shards: r.cfg.Shards,
		Adoption: adoption, PairAttempts: r.plan.PairAttempts(), Budget: r.cfg.Budget,
		Trial: r.trialFunc(), Log: r.log, OnProblem: r.problem,
		OnStart: r.cfg.Hooks.Start, OnProgress: r.cfg.Hooks.Progress}
	if r.cfg.Shards > 0 && r.store != nil {
		// The shards meet in the store: each takes the looks with the
		// others' rows, so a run that is decided stops on every shard.
		ex.Peers = func(ctx context.Context) ([]pairbench.Row, error) {
			return rundir.StoredPeerRows(ctx, r.store, r.plan.RunID, r.cfg.Shards, r.cfg.Shard)
		}
	}
	return ex
}

func (r *Run) trialFunc() runner.TrialFunc {
	if r.trials == nil {
		return nil
	}
	return r.trials.Run
}

// Upload mirrors the run directory into the store now: everything new or
// changed since the last upload, the report last. Without a store it does
// nothing.
func (r *Run) Upload(ctx context.Context) error {
	if r.sync == nil {
		return nil
	}
	_, err := r.sync.Sync(ctx)
	return err
}

// UploadError is a bench whose last upload to the store failed: the run
// is whole on disk, and running the same command again uploads it (a
// finished run only reports and uploads).
type UploadError struct {
	Store string
	Dir   string
	Err   error
}

func (e *UploadError) Error() string {
	return fmt.Sprintf("the upload to the store %s failed (%v); the run is whole in %s: run the same command again to upload it", e.Store, e.Err, e.Dir)
}

func (e *UploadError) Unwrap() error { return e.Err }

// finalUploadTimeout bounds the last upload of a run cut short by a
// signal: a runner told to stop does not wait on a store that is down.
const finalUploadTimeout = 2 * time.Minute

// finalUpload uploads the run once more, even when ctx has ended (bounded
// then), and returns an *UploadError if that fails.
func (r *Run) finalUpload(ctx context.Context) error {
	uctx := context.WithoutCancel(ctx)
	if ctx.Err() != nil {
		var cancel context.CancelFunc
		uctx, cancel = context.WithTimeout(uctx, finalUploadTimeout)
		defer cancel()
	}
	if err := r.Upload(uctx); err != nil {
		return &UploadError{Store: r.cfg.Store, Dir: r.dir.Path, Err: err}
	}
	return nil
}

// uploads runs the uploads of a running bench in the background: a slot
// that recorded a row never waits on the store, and one store outage costs
// the trials nothing. Kicks that come while an upload runs make one more.
type uploads struct {
	r       *Run
	kicks   chan struct{}
	stopped chan struct{}
	done    chan struct{}
}

// startUploads starts the background uploads; stop ends them.
func (r *Run) startUploads(ctx context.Context) *uploads {
	u := &uploads{r: r, kicks: make(chan struct{}, 1), stopped: make(chan struct{}), done: make(chan struct{})}
	if r.sync == nil {
		close(u.done)
		return u
	}
	go func() {
		defer close(u.done)
		for {
			select {
			case <-u.stopped:
				return
			case <-u.kicks:
			}
			if err := r.Upload(context.WithoutCancel(ctx)); err != nil {
				r.problem(rundir.Problem{Msg: "upload to the artifact store failed; it is tried again after the next row and at the end", Attrs: []any{"err", err}})
			}
		}
	}()
	return u
}

// kick asks for an upload soon.
func (u *uploads) kick() {
	select {
	case u.kicks <- struct{}{}:
	default: // one is due already
	}
}

// stop waits for the upload under way, if any, and ends the uploads.
func (u *uploads) stop() {
	select {
	case <-u.done:
		return
	default:
	}
	close(u.stopped)
	<-u.done
}
