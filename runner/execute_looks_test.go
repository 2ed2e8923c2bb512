package runner

import (
	"context"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/report"
	"github.com/pairbench/pairbench/rundir"
	"github.com/pairbench/pairbench/stats"
)

// looksPlan is a plan of intents intents of pairs pairs each, taking its
// looks by the default design (a third, two thirds, all; futility where
// conditional power falls below 0.6), as NewPlan plans one.
func looksPlan(intents, pairs int) *rundir.Plan {
	d := stats.DefaultDesign()
	p := &rundir.Plan{V: rundir.PlanVersion, RunID: "r1", Alpha: 0.05, Seed: 7, Model: rundir.Model{Provider: "scripted", ID: "m"},
		Looks: rundir.LookPairs(&d, pairs, intents, 0.05), FutilityPower: d.FutilityPower}
	rng := rand.New(rand.NewPCG(7, 0))
	for i := range intents {
		p.Intents = append(p.Intents, rundir.PlannedIntent{ID: fmt.Sprintf("i%d", i), Domain: "d.example", Class: "pinned",
			Pairs: rundir.LookOrders(p.Looks, pairs, rng)})
	}
	return p
}

// timedTrials scores every trial correct, in a time that depends on its
// pair alone (10 to 16 s), control's speedup times treatment's, times a
// lognormal noise of σ noise drawn from the trial's intent, pair and arm
// (none at 0); it counts the trials it ran. With speedup 1 and no noise
// the arms tie in every pair: no effect.
type timedTrials struct {
	speedup float64
	noise   float64
	ran     atomic.Int64
	// interrupt, if set, is called before each trial; true interrupts it.
	interrupt func(n int64) bool
}

func (f *timedTrials) trial(ctx context.Context, spec TrialSpec) (pairbench.Row, error) {
	n := f.ran.Add(1)
	if f.interrupt != nil && f.interrupt(n) {
		return pairbench.Row{}, fmt.Errorf("stopped: %w", ErrInterrupted)
	}
	wall := float64(10 + spec.Job.Pair%7)
	if spec.Arm == pairbench.Control {
		wall *= f.speedup
	}
	if f.noise > 0 {
		h := fnv.New64a()
		fmt.Fprint(h, spec.Job.Intent, spec.Job.Pair, spec.Arm)
		wall *= math.Exp(f.noise * rand.New(rand.NewPCG(h.Sum64(), 1)).NormFloat64())
	}
	return pairbench.Row{V: pairbench.RowVersion, RunID: "r1", Intent: spec.Job.Intent, Domain: spec.Job.Domain, Stage: spec.Job.Stage,
		Pair: spec.Job.Pair, Order: spec.Job.Order, Arm: spec.Arm, Attempt: spec.Job.Attempt, TrialDir: spec.Dir,
		Outcome: pairbench.Correct, Adopted: spec.Arm == pairbench.Treatment, WallSeconds: wall, Turns: 3}, nil
}

// runLooksPlan runs plan in a new directory to its end and returns the
// directory and the plan as run.json then holds it.
func runLooksPlan(t *testing.T, plan *rundir.Plan, f *timedTrials) (rundir.RunDir, *rundir.Plan) {
	t.Helper()
	dir := rundir.RunDir{Path: t.TempDir()}
	require.NoError(t, dir.WritePlan(plan))
	ex := &Execution{Dir: dir, Plan: plan, Slots: 2, Trial: f.trial}
	require.NoError(t, ex.Run(context.Background()))
	stored, err := dir.ReadPlan()
	require.NoError(t, err)
	return dir, stored
}

// TestLooksStopABigEffectAtTheFirstLook: three intents of 30 pairs,
// treatment twice as fast in every pair. The first look (10 pairs per
// intent) already reaches `faster` at its level (0.0007), so the run
// stops there, runs 60 trials instead of 180, records why in run.json,
// and reads complete; a resume runs nothing more.
func TestLooksStopABigEffectAtTheFirstLook(t *testing.T) {
	plan := looksPlan(3, 30)
	require.Equal(t, []int{10, 20, 30}, plan.Looks)
	f := &timedTrials{speedup: 2}
	dir, stored := runLooksPlan(t, plan, f)

	assert.EqualValues(t, 3*10*2, f.ran.Load(), "only the first look's pairs ran")
	require.NotNil(t, stored.Stop, "run.json records the stop")
	assert.Equal(t, 1, stored.Stop.Look)
	assert.Equal(t, 10, stored.Stop.Pairs)
	assert.Equal(t, report.StopEfficacy, stored.Stop.Kind)
	assert.Equal(t, pairbench.Faster, stored.Stop.Verdict)
	assert.True(t, stored.Stop.Claimed)
	for _, r := range rowsOf(t, dir, rundir.RowsFile) {
		assert.Less(t, r.Pair, 10, "no pair past the first look ran")
	}

	st := statusOf(t, dir, stored)
	assert.True(t, st.Finished(), "a run that stopped is complete: %+v", st)
	assert.Equal(t, 30, st.Planned, "the pairs in force")
	assert.Equal(t, 30, st.Done)
	assert.Len(t, stored.PairsInForce(), 30)

	again := &timedTrials{speedup: 2}
	ex := &Execution{Dir: dir, Plan: stored, Slots: 2, Trial: again.trial}
	require.NoError(t, ex.Run(context.Background()))
	assert.Zero(t, again.ran.Load(), "a resume of a stopped run runs none of its skipped pairs")

	sp := stored.StatsPlan()
	assert.Equal(t, 10, sp.Intents[0].Pairs, "the report counts the look's pairs")
	assert.InDelta(t, stats.Spent(0.05, 1.0/3), sp.Alpha, 1e-12, "at the first look's level")
	assert.Equal(t, &report.Looked{Pairs: []int{10, 20, 30}, Look: 1, RunAlpha: 0.05, Stop: report.StopEfficacy, Reason: stored.Stop.Reason}, sp.Looks)
}

// TestLooksStopANullRunForFutility: the arms tie in every pair, so both
// pooled tests' p are 1 at the first look, above its futility bound: the
// run stops there for futility, claiming nothing.
func TestLooksStopANullRunForFutility(t *testing.T) {
	plan := looksPlan(3, 30)
	f := &timedTrials{speedup: 1}
	dir, stored := runLooksPlan(t, plan, f)
	assert.EqualValues(t, 3*10*2, f.ran.Load())
	require.NotNil(t, stored.Stop)
	assert.Equal(t, rundir.LookStop{Look: 1, Pairs: 10, Kind: report.StopFutility, Verdict: stored.Stop.Verdict, Reason: stored.Stop.Reason}, *stored.Stop)
	assert.False(t, stored.Stop.Claimed)
	bound := plan.Design().FutilityAt(0.05, 0)
	assert.Contains(t, stored.Stop.Reason, fmt.Sprintf("above %.2g, where either test's conditional power", bound))

	// The look's own report, built apart from the runner, says the same.
	rows := rowsOf(t, dir, rundir.RowsFile)
	rep := report.Build(plan.StatsPlanAt(0), rows)
	require.NotNil(t, rep.Headline)
	assert.Greater(t, rep.Headline.Speed.P, bound)
	assert.Greater(t, rep.Headline.Accuracy.P, bound)
	assert.True(t, statusOf(t, dir, stored).Finished())
}

// TestLooksGoOnUntilALookDecides: treatment 1.15× faster, each trial's
// time with its own noise, over three intents of 30 pairs:
// the run goes on while a look's report neither reaches a verdict at its
// level nor falls under the futility bound, and stops at the first that
// does; each look's report is built here apart from the runner, from the
// rows of the pairs the look sees.
func TestLooksGoOnUntilALookDecides(t *testing.T) {
	plan := looksPlan(3, 30)
	f := &timedTrials{speedup: 1.15, noise: 0.3}
	dir, stored := runLooksPlan(t, plan, f)
	require.NotNil(t, stored.Stop)
	assert.Greater(t, stored.Stop.Look, 1, "the first look decides nothing")
	assert.EqualValues(t, 3*2*plan.Looks[stored.Stop.Look-1], f.ran.Load(), "the pairs up to the stop ran, no more")
	rows := rowsOf(t, dir, rundir.RowsFile)
	d := plan.Design()
	for k := range stored.Stop.Look {
		var seen []pairbench.Row
		for _, r := range rows {
			if r.Pair < plan.Looks[k] {
				seen = append(seen, r)
			}
		}
		kind, _ := report.Decide(*d, report.Build(plan.StatsPlanAt(k), seen), k)
		if k < stored.Stop.Look-1 {
			assert.Empty(t, kind, "look %d goes on", k+1)
		} else {
			assert.Equal(t, stored.Stop.Kind, kind, "look %d stops", k+1)
		}
	}
}

// TestLooksAreTheSameForShardsAndResumes: the same plan run whole, run as
// two shards (merge then decides from their rows), and run with
// interruptions and resumes, stops at the same look for the same reason.
func TestLooksAreTheSameForShardsAndResumes(t *testing.T) {
	for _, speedup := range []float64{1, 1.5, 3} {
		t.Run(fmt.Sprint(speedup), func(t *testing.T) {
			_, whole := runLooksPlan(t, looksPlan(3, 30), &timedTrials{speedup: speedup, noise: 0.3})
			plan := looksPlan(3, 30) // runLooksPlan's has its stop now
			require.NotNil(t, whole.Stop)

			// Shards run their share of every look; the looks are taken
			// from all their rows.
			sharded := rundir.RunDir{Path: t.TempDir()}
			require.NoError(t, sharded.WritePlan(plan))
			for k := 1; k <= 2; k++ {
				ex := &Execution{Dir: sharded, Plan: plan, Slots: 2, Shard: k, Shards: 2, Trial: (&timedTrials{speedup: speedup, noise: 0.3}).trial}
				require.NoError(t, ex.Run(context.Background()))
			}
			stored, err := sharded.ReadPlan()
			require.NoError(t, err)
			assert.Nil(t, stored.Stop, "a shard records no stop")
			stop, err := sharded.DecideStop(stored)
			require.NoError(t, err)
			assert.Equal(t, whole.Stop, stop)
			stored.Stop = stop
			assert.True(t, statusOf(t, sharded, stored).Finished(), "the shards' rows past the stop count in nothing")

			// Interrupted after every 25th trial, resumed until it ends.
			resumed := rundir.RunDir{Path: t.TempDir()}
			require.NoError(t, resumed.WritePlan(looksPlan(3, 30)))
			for round := 0; ; round++ {
				require.Less(t, round, 100)
				p, err := resumed.ReadPlan()
				require.NoError(t, err)
				ctx, cancel := context.WithCancel(context.Background())
				f := &timedTrials{speedup: speedup, noise: 0.3, interrupt: func(n int64) bool {
					if n > 25 {
						cancel()
						return true
					}
					return false
				}}
				err = (&Execution{Dir: resumed, Plan: p, Slots: 1, Trial: f.trial}).Run(ctx)
				cancel()
				if err == nil {
					break
				}
				require.ErrorIs(t, err, context.Canceled)
			}
			p, err := resumed.ReadPlan()
			require.NoError(t, err)
			assert.Equal(t, whole.Stop, p.Stop)
		})
	}
}

// TestShardsTakeTheLooksTogether: two shards that see each other's rows
// (Peers, as through a store) run at once and take every look together:
// each stops where the whole run stops, and between them they run the
// trials the whole run ran, not their share of every look. A shard whose
// peer never stores a row waits its while at each look, then runs its
// share of every look, leaving the looks to merge.
func TestShardsTakeTheLooksTogether(t *testing.T) {
	for _, speedup := range []float64{2, 1.15} {
		t.Run(fmt.Sprint(speedup), func(t *testing.T) {
			whole := &timedTrials{speedup: speedup, noise: 0.3}
			_, stopped := runLooksPlan(t, looksPlan(3, 30), whole)
			require.NotNil(t, stopped.Stop)

			plan := looksPlan(3, 30)
			dir := rundir.RunDir{Path: t.TempDir()}
			require.NoError(t, dir.WritePlan(plan))
			peerRows := func(except int) func(context.Context) ([]pairbench.Row, error) {
				return func(context.Context) ([]pairbench.Row, error) { return shardRows(dir, 3-except) }
			}
			f := &timedTrials{speedup: speedup, noise: 0.3}
			errs := make(chan error, 2)
			for k := 1; k <= 2; k++ {
				ex := &Execution{Dir: dir, Plan: plan, Slots: 2, Shard: k, Shards: 2, Trial: f.trial, Peers: peerRows(k), lookWait: 20 * time.Second}
				go func() { errs <- ex.Run(context.Background()) }()
			}
			require.NoError(t, <-errs)
			require.NoError(t, <-errs)

			assert.Equal(t, whole.ran.Load(), f.ran.Load(), "the shards ran the trials the whole run ran")
			for _, r := range rowsOf(t, dir, "") {
				assert.Less(t, r.Pair, stopped.Stop.Pairs, "no pair past the stop ran")
			}
			stop, err := dir.DecideStop(plan)
			require.NoError(t, err)
			assert.Equal(t, stopped.Stop, stop, "merge finds the same stop")
		})
	}

	t.Run("a peer that never stores", func(t *testing.T) {
		plan := looksPlan(3, 30)
		dir := rundir.RunDir{Path: t.TempDir()}
		require.NoError(t, dir.WritePlan(plan))
		f := &timedTrials{speedup: 2}
		none := func(context.Context) ([]pairbench.Row, error) { return nil, nil }
		ex := &Execution{Dir: dir, Plan: plan, Slots: 2, Shard: 1, Shards: 2, Trial: f.trial, Peers: none, lookWait: 50 * time.Millisecond}
		require.NoError(t, ex.Run(context.Background()))
		pairs, err := ex.Pairs()
		require.NoError(t, err)
		assert.EqualValues(t, 2*len(pairs), f.ran.Load(), "its share of every look ran")
	})
}

// shardRows reads the rows shard k of dir recorded, as a peer reads them
// through a store.
func shardRows(dir rundir.RunDir, k int) ([]pairbench.Row, error) {
	var rows []pairbench.Row
	_, err := dir.ScanRows(rundir.RowQuery{File: rundir.RowsFileOf(k)}, func(r *pairbench.Row) { rows = append(rows, *r) })
	return rows, err
}

// TestAShardReadsItsPeersAgainAfterAFailedRead: a read of the other
// shards' rows that fails (a store that blips) is tried again within the
// shard's wait at the look. Two shards whose first read fails still take
// the looks together and stop where the whole run stops; they used to give
// the look up at the first error and run their share of the next look. A
// store that always fails is read until the wait ends, at every look, and
// the shard then runs its share of every look.
func TestAShardReadsItsPeersAgainAfterAFailedRead(t *testing.T) {
	whole := &timedTrials{speedup: 2, noise: 0.3}
	_, stopped := runLooksPlan(t, looksPlan(3, 30), whole)
	require.NotNil(t, stopped.Stop)
	require.Less(t, stopped.Stop.Look, 3, "the whole run stops early")

	t.Run("fails once", func(t *testing.T) {
		plan := looksPlan(3, 30)
		dir := rundir.RunDir{Path: t.TempDir()}
		require.NoError(t, dir.WritePlan(plan))
		flaky := func(except int) func(context.Context) ([]pairbench.Row, error) {
			var reads atomic.Int64
			return func(context.Context) ([]pairbench.Row, error) {
				if reads.Add(1) == 1 {
					return nil, fmt.Errorf("store: shards/%d/rows.jsonl: 503 slow down", 3-except)
				}
				return shardRows(dir, 3-except)
			}
		}
		f := &timedTrials{speedup: 2, noise: 0.3}
		errs := make(chan error, 2)
		for k := 1; k <= 2; k++ {
			// A wait of 10 s reads every half second: the second read
			// comes well within it.
			ex := &Execution{Dir: dir, Plan: plan, Slots: 2, Shard: k, Shards: 2, Trial: f.trial, Peers: flaky(k), lookWait: 10 * time.Second}
			go func() { errs <- ex.Run(context.Background()) }()
		}
		require.NoError(t, <-errs)
		require.NoError(t, <-errs)
		assert.Equal(t, whole.ran.Load(), f.ran.Load(), "the shards ran the trials the whole run ran, not their share of the next look")
		last := 0
		for _, r := range rowsOf(t, dir, "") {
			last = max(last, r.Pair)
		}
		assert.Less(t, last, stopped.Stop.Pairs, "no pair past the stop ran")
	})

	t.Run("always fails", func(t *testing.T) {
		plan := looksPlan(3, 30)
		dir := rundir.RunDir{Path: t.TempDir()}
		require.NoError(t, dir.WritePlan(plan))
		var reads atomic.Int64
		down := func(context.Context) ([]pairbench.Row, error) {
			reads.Add(1)
			return nil, fmt.Errorf("store: connection refused")
		}
		f := &timedTrials{speedup: 2}
		ex := &Execution{Dir: dir, Plan: plan, Slots: 2, Shard: 1, Shards: 2, Trial: f.trial, Peers: down, lookWait: 50 * time.Millisecond}
		require.NoError(t, ex.Run(context.Background()))
		pairs, err := ex.Pairs()
		require.NoError(t, err)
		assert.EqualValues(t, 2*len(pairs), f.ran.Load(), "its share of every look ran")
		assert.Greater(t, reads.Load(), int64(4), "each of the two looks a shard takes was read more than once, until its wait ended")
	})
}

// TestLooksRecordAStopDecidedBeforeACrash: a runner killed between the
// last row of a deciding look and the record of its stop leaves run.json
// without it; the resume decides the look from the rows, runs nothing,
// and records the same stop.
func TestLooksRecordAStopDecidedBeforeACrash(t *testing.T) {
	plan := looksPlan(3, 30)
	dir, stored := runLooksPlan(t, plan, &timedTrials{speedup: 2})
	want := stored.Stop
	stored.Stop = nil
	require.NoError(t, dir.WritePlan(stored))
	f := &timedTrials{speedup: 2}
	require.NoError(t, (&Execution{Dir: dir, Plan: stored, Slots: 2, Trial: f.trial}).Run(context.Background()))
	assert.Zero(t, f.ran.Load())
	again, err := dir.ReadPlan()
	require.NoError(t, err)
	assert.Equal(t, want, again.Stop)
}

// statusOf counts the Status of the run in dir under plan.
func statusOf(t *testing.T, dir rundir.RunDir, plan *rundir.Plan) rundir.Status {
	t.Helper()
	c := rundir.NewStatusCounter(plan)
	_, err := dir.ScanRows(rundir.RowQuery{Plan: plan}, c.Add)
	require.NoError(t, err)
	return c.Status()
}

// TestProgressCountsThePairsInForce: the progress of a run of looks counts
// the pairs of the look under way, not every planned pair: a null run
// stopped for futility at its first look ends at 30 of 30 pairs in force
// (of 90 planned, look 1 of 3) with the stop it made, rather than 30 of 90;
// a big effect's run moves to the next look only once the first is done,
// and says so.
func TestProgressCountsThePairsInForce(t *testing.T) {
	follow := func(plan *rundir.Plan, f *timedTrials) []rundir.Progress {
		t.Helper()
		dir := rundir.RunDir{Path: t.TempDir()}
		require.NoError(t, dir.WritePlan(plan))
		var seen []rundir.Progress
		ex := &Execution{Dir: dir, Plan: plan, Slots: 2, Trial: f.trial, OnProgress: func(p rundir.Progress) { seen = append(seen, p) }}
		require.NoError(t, ex.Run(context.Background()))
		require.NotEmpty(t, seen)
		return seen
	}
	null := follow(looksPlan(3, 30), &timedTrials{speedup: 1})
	end := null[len(null)-1]
	assert.Equal(t, 30, end.Pairs, "the first look's pairs")
	assert.Equal(t, 30, end.Done)
	assert.Equal(t, 90, end.Planned)
	assert.Equal(t, 1, end.Look)
	assert.Equal(t, 3, end.Looks)
	require.NotNil(t, end.Stop, "the stop is told")
	assert.Equal(t, report.StopFutility, end.Stop.Kind)
	for _, p := range null {
		assert.LessOrEqual(t, p.Done, p.Pairs, "never more done than in force")
		if p.Look > 0 {
			assert.Equal(t, 30, p.Pairs, "only the first look's pairs are in force")
		}
	}

	noisy := follow(looksPlan(3, 30), &timedTrials{speedup: 1.2, noise: 0.3})
	var looks []int
	for _, p := range noisy {
		if len(looks) == 0 || looks[len(looks)-1] != p.Look {
			looks = append(looks, p.Look)
		}
		if p.Look == 2 {
			assert.Equal(t, 60, p.Pairs, "the second look's pairs are in force")
			assert.GreaterOrEqual(t, p.Done, 30, "the first look's pairs are done before the second's run")
		}
	}
	require.GreaterOrEqual(t, len(looks), 3, "the run went past its first look: %v", looks)
	assert.Equal(t, []int{0, 1, 2}, looks[:3], "the looks follow one another")
}
