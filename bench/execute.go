package bench

import (
	"context"
	"errors"
	"fmt"

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
	if err := r.agent.Warm(ctx, r.trials.BrowserMCP("ws://127.0.0.1:9/warm-up")); err != nil {
		r.problem(runner.Problem{Msg: "agent warm-up failed; trials run without a compile cache", Attrs: []any{"err", err}})
	}
	ex := r.execution()
	ex.OnRow = func(row pairbench.Row) {
		r.log.Info("trial", "intent", row.Intent, "pair", row.Pair, "arm", row.Arm, "attempt", row.Attempt,
			"outcome", row.Outcome, "reason", row.Reason, "seconds", fmt.Sprintf("%.1f", row.WallSeconds), "turns", row.Turns)
		if r.cfg.Hooks.Row != nil {
			r.cfg.Hooks.Row(row)
		}
		r.upload(ctx)
	}
	err := ex.Run(ctx)
	r.upload(ctx)
	return err
}

// execution is this runner's share of the run.
func (r *Run) execution() *runner.Execution {
	return &runner.Execution{Dir: r.dir, Plan: r.plan, Slots: r.cfg.Slots, Shard: r.cfg.Shard, Shards: r.cfg.Shards,
		Adoption: r.cfg.Adoption, Trial: r.trialFunc(), Log: r.log, OnProblem: r.problem,
		OnStart: r.cfg.Hooks.Start, OnProgress: r.cfg.Hooks.Progress}
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

// upload uploads the run, even when ctx has ended, and tells a failure as
// a problem: it is retried at the next upload.
func (r *Run) upload(ctx context.Context) {
	if err := r.Upload(context.WithoutCancel(ctx)); err != nil {
		r.problem(runner.Problem{Msg: "upload to the artifact store failed; it is retried after the next row", Attrs: []any{"err", err}})
	}
}
