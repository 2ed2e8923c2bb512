package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/artifacts"
	"github.com/pairbench/pairbench/intents"
	"github.com/pairbench/pairbench/report"
	"github.com/pairbench/pairbench/rundir"
	"github.com/pairbench/pairbench/runner"
	"github.com/pairbench/pairbench/stats"
)

// looksRun plans the example registry's two books intents at 12 pairs per
// intent with cfg's looks, runs it with scripted trials (treatment
// speedup times as fast, every trial correct) until it stops, and returns
// the open run as a resume with cfg finds it, with what to plan it with.
func looksRun(t *testing.T, cfg Config, speedup float64) (*Run, *intents.Registry, runner.PlanOptions) {
	t.Helper()
	reg, err := intents.Load("../examples/registry")
	require.NoError(t, err)
	opts := runner.PlanOptions{RunID: "r1", Intents: []string{"books-cheapest-by-author", "books-count-by-author"}, Pairs: 12,
		Model: rundir.Model{Provider: "pairbench", ID: "pairbench-scripted", Scripted: true}, Seed: 3, Alpha: 0.05,
		Now: time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC), Design: cfg.Design()}
	plan, _, err := runner.NewPlan(reg, opts)
	require.NoError(t, err)
	dir := rundir.RunDir{Path: t.TempDir()}
	require.NoError(t, dir.WritePlan(plan))
	trial := func(_ context.Context, s runner.TrialSpec) (pairbench.Row, error) {
		wall := float64(20 + s.Job.Pair%5)
		if s.Arm == pairbench.Control {
			wall *= speedup
		}
		return pairbench.Row{V: pairbench.RowVersion, RunID: "r1", Intent: s.Job.Intent, Domain: s.Job.Domain, Stage: s.Job.Stage,
			Pair: s.Job.Pair, Order: s.Job.Order, Arm: s.Arm, Attempt: s.Job.Attempt, TrialDir: s.Dir,
			Outcome: pairbench.Correct, Adopted: s.Arm == pairbench.Treatment, WallSeconds: wall}, nil
	}
	require.NoError(t, (&runner.Execution{Dir: dir, Plan: plan, Slots: 2, Trial: trial}).Run(t.Context()))
	return &Run{cfg: cfg, dir: dir, log: slog.New(slog.DiscardHandler), agentName: "pi"}, reg, opts
}

// TestTopUpOfARunThatClaimedIsRefused: a run that stopped at a look with a
// verdict is not topped up (ErrClaimed, which the CLI exits 2 on), and its
// run.json stays as it was; a resume with its own pairs resumes it, still
// stopped. A run of one look that claimed, with no stop recorded, is
// judged from its rows alike.
func TestTopUpOfARunThatClaimedIsRefused(t *testing.T) {
	for _, looks := range []int{3, 1} {
		t.Run(fmt.Sprint(looks), func(t *testing.T) {
			cfg := Config{Looks: looks, Pairs: 18, PairsGiven: true}
			r, reg, opts := looksRun(t, cfg, 2)
			before, err := r.dir.ReadPlan()
			require.NoError(t, err)
			if looks == 3 {
				require.NotNil(t, before.Stop, "the run stopped at a look")
				assert.Equal(t, report.StopEfficacy, before.Stop.Kind)
			} else {
				assert.Nil(t, before.Stop, "a run of one look records no stop")
			}
			opts.Pairs = 18
			_, _, err = r.planOrResume(context.Background(), reg, opts)
			require.ErrorIs(t, err, ErrClaimed)
			assert.Contains(t, err.Error(), "run r1 claimed a difference (the verdict faster) at look ")
			after, err := r.dir.ReadPlan()
			require.NoError(t, err)
			assert.Equal(t, before, after, "run.json is as it was")

			r.cfg.Pairs, opts.Pairs = 12, 12
			resumed, _, err := r.planOrResume(context.Background(), reg, opts)
			require.NoError(t, err)
			assert.Equal(t, before.Stop, resumed.Stop)
		})
	}
}

// TestTopUpOfAFutileRunGoesOn: a run with no effect stops for futility at
// its first look; a top-up passes that look and goes on from the next, the
// skipped pairs back in force, and records the new look in run.json.
func TestTopUpOfAFutileRunGoesOn(t *testing.T) {
	cfg := Config{Looks: 3, Pairs: 18, PairsGiven: true}
	r, reg, opts := looksRun(t, cfg, 1)
	before, err := r.dir.ReadPlan()
	require.NoError(t, err)
	require.NotNil(t, before.Stop)
	require.Equal(t, report.StopFutility, before.Stop.Kind)
	opts.Pairs = 18
	plan, _, err := r.planOrResume(context.Background(), reg, opts)
	require.NoError(t, err)
	assert.Nil(t, plan.Stop)
	assert.Equal(t, before.Stop.Look, plan.Passed)
	assert.Equal(t, append(append([]int(nil), before.Looks...), 18), plan.Looks)
	assert.Len(t, plan.PairsInForce(), 2*18)
	stored, err := r.dir.ReadPlan()
	require.NoError(t, err)
	assert.Equal(t, plan, stored, "run.json holds the topped-up plan")
}

// TestDesignOfLooks: --looks N looks at N equal fractions of the pairs,
// the default design for 3, with its futility bound; 0 and 1 are one look.
func TestDesignOfLooks(t *testing.T) {
	d := stats.DefaultDesign()
	assert.Equal(t, &d, Config{Looks: 3}.Design())
	assert.Equal(t, []float64{0.5, 1}, Config{Looks: 2}.Design().Looks)
	four := Config{Looks: 4}.Design()
	require.NoError(t, four.Check())
	assert.Equal(t, []float64{0.25, 0.5, 0.75, 1}, four.Looks)
	assert.Nil(t, Config{Looks: 1}.Design())
	assert.Nil(t, Config{}.Design())
}

// shardedInStore stores the run r ran as a run split across 3 runners
// would leave it: its run.json and each pair's rows under
// shards/<pair mod 3 + 1>/rows.jsonl, and returns the store.
func shardedInStore(t *testing.T, r *Run) artifacts.Store {
	t.Helper()
	store, err := artifacts.NewLocal(t.TempDir())
	require.NoError(t, err)
	ctx := context.Background()
	plan, err := os.ReadFile(r.dir.File(rundir.PlanFile))
	require.NoError(t, err)
	require.NoError(t, store.Put(ctx, rundir.StoreKey("r1", rundir.PlanFile), bytes.NewReader(plan)))
	shards := map[int][]byte{}
	_, err = r.dir.ScanRows(rundir.RowQuery{}, func(row *pairbench.Row) {
		k := row.Pair%3 + 1
		shards[k], err = pairbench.AppendRow(shards[k], *row)
		require.NoError(t, err)
	})
	require.NoError(t, err)
	require.Len(t, shards, 3)
	for k, rows := range shards {
		require.NoError(t, store.Put(ctx, rundir.StoreKey("r1", rundir.RowsFileOf(k)), bytes.NewReader(rows)))
	}
	return store
}

// TestPlanOnlyTopsUpAShardedRunFromTheStore: the plan job of a run split
// across runners (--plan-only with a store, on a fresh runner) tops the run
// up from the store: it takes the stored plan alone, and where the run
// stopped is decided from every shard's stored rows, so a run that
// stopped for futility goes on from its next look, and one that claimed a
// difference is refused (ErrClaimed) as an unsharded one is.
func TestPlanOnlyTopsUpAShardedRunFromTheStore(t *testing.T) {
	for _, tc := range []struct {
		speedup float64
		claimed bool
	}{{1, false}, {2, true}} {
		t.Run(fmt.Sprint(tc.speedup), func(t *testing.T) {
			cfg := Config{Looks: 3, Pairs: 18, PairsGiven: true, PlanOnly: true}
			ran, reg, opts := looksRun(t, cfg, tc.speedup)
			stopped, err := ran.dir.ReadPlan()
			require.NoError(t, err)
			require.NotNil(t, stopped.Stop)
			store := shardedInStore(t, ran)
			// The shards never record where the run stopped: merge decides it.
			unstopped := *stopped
			unstopped.Stop = nil
			data, err := json.Marshal(&unstopped)
			require.NoError(t, err)
			require.NoError(t, store.Put(context.Background(), rundir.StoreKey("r1", rundir.PlanFile), bytes.NewReader(data)))

			r := &Run{cfg: cfg, dir: rundir.RunDir{Path: t.TempDir()}, log: slog.New(slog.DiscardHandler), agentName: "pi", store: store}
			fetched, err := r.dir.ReconcilePlan(context.Background(), store, "r1")
			require.NoError(t, err, "the shards' rows in the store are no obstacle to a plan-only runner")
			assert.True(t, fetched)
			opts.Pairs = 18
			plan, _, err := r.planOrResume(context.Background(), reg, opts)
			if tc.claimed {
				require.ErrorIs(t, err, ErrClaimed)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, stopped.Stop.Look, plan.Passed, "the look it stopped at, decided from the shards' rows, is passed")
			assert.Equal(t, append(append([]int(nil), stopped.Looks...), 18), plan.Looks)
			local, err := r.dir.ReadPlan()
			require.NoError(t, err)
			assert.Equal(t, plan, local, "run.json holds the topped-up plan, for the upload")
		})
	}
}

// TestResumeRefusesARunItCannotFind: a bench told to resume (the Action's
// resume input, --resume) plans no new run when neither its directory nor
// its store holds the run.
func TestResumeRefusesARunItCannotFind(t *testing.T) {
	reg, err := intents.Load("../examples/registry")
	require.NoError(t, err)
	store, err := artifacts.NewLocal(t.TempDir())
	require.NoError(t, err)
	r := &Run{cfg: Config{RunID: "r1", Resume: true, Store: "a store"}, dir: rundir.RunDir{Path: t.TempDir()}, log: slog.New(slog.DiscardHandler), agentName: "pi", store: store}
	_, _, err = r.planOrResume(context.Background(), reg, runner.PlanOptions{RunID: "r1", Intents: []string{"books-count-by-author"}, Pairs: 2, Seed: 3, Alpha: 0.05,
		Model: rundir.Model{Provider: "pairbench", ID: "pairbench-scripted", Scripted: true}, Now: time.Now()})
	require.ErrorIs(t, err, ErrNothingToResume)
	assert.Contains(t, err.Error(), "run r1 is not in "+r.dir.Path+" nor in the store a store")
	_, err = os.Stat(r.dir.File(rundir.PlanFile))
	assert.ErrorIs(t, err, os.ErrNotExist, "nothing planned")
}

// TestResumeNeedsARunID: resuming with no run id is refused before
// anything is read or written, naming the flag, rather than looking for a
// fresh id that names no run.
func TestResumeNeedsARunID(t *testing.T) {
	c := DefaultConfig()
	c.Registry, c.RunsDir, c.Resume = "../examples/registry", t.TempDir(), true
	err := c.Complete()
	require.ErrorIs(t, err, ErrNothingToResume)
	assert.Contains(t, err.Error(), "--resume needs --run-id")
	assert.Empty(t, c.RunID, "no id is made up")
	entries, err := os.ReadDir(c.RunsDir)
	require.NoError(t, err)
	assert.Empty(t, entries, "nothing written")
}
