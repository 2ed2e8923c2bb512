package runner

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/pairbench/pairbench/rundir"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench"
)

func execPlan(intentsPairs map[string]int, domains map[string]string) *rundir.Plan {
	p := &rundir.Plan{V: rundir.PlanVersion, RunID: "r1", Alpha: 0.05, Model: rundir.Model{Provider: "scripted", ID: "m"}}
	for _, id := range []string{"a", "b", "c"} {
		n, ok := intentsPairs[id]
		if !ok {
			continue
		}
		in := rundir.PlannedIntent{ID: id, Domain: domains[id], Class: "pinned"}
		for i := range n {
			in.Pairs = append(in.Pairs, rundir.PlannedPair{Pair: i, Order: []pairbench.Order{pairbench.AB, pairbench.BA}[i%2]})
		}
		p.Intents = append(p.Intents, in)
	}
	return p
}

// fakeTrials scores every trial correct unless told otherwise, and records
// the trials it ran.
type fakeTrials struct {
	mu     sync.Mutex
	ran    []TrialSpec
	decide func(spec TrialSpec, n int) (pairbench.Outcome, bool, error)
}

func (f *fakeTrials) trial(ctx context.Context, spec TrialSpec) (pairbench.Row, error) {
	f.mu.Lock()
	n := len(f.ran)
	f.ran = append(f.ran, spec)
	f.mu.Unlock()
	out, adopted := pairbench.Correct, true
	if f.decide != nil {
		var err error
		out, adopted, err = f.decide(spec, n)
		if err != nil {
			return pairbench.Row{}, err
		}
	}
	return pairbench.Row{RunID: "r1", Intent: spec.Job.Intent, Domain: spec.Job.Domain, Stage: spec.Job.Stage,
		Pair: spec.Job.Pair, Order: spec.Job.Order, Arm: spec.Arm, Attempt: spec.Job.Attempt,
		TrialDir: spec.Dir, Outcome: out, Adopted: adopted}, nil
}

// rowsOf reads a rows file of d, failing on a partial line.
func rowsOf(t *testing.T, d rundir.RunDir, rel string) []pairbench.Row {
	t.Helper()
	var rows []pairbench.Row
	read, err := d.ScanRows(rundir.RowQuery{File: rel}, func(r *pairbench.Row) { rows = append(rows, *r) })
	require.NoError(t, err)
	assert.Empty(t, read.Warnings, "reading %s", rel)
	return rows
}

// scoredOnce asserts every planned pair is complete in exactly one attempt
// (both arms scored in it): a resumed or rerun pair never counts twice.
func scoredOnce(t *testing.T, plan *rundir.Plan, rows []pairbench.Row) {
	t.Helper()
	scored := map[string]int{}
	for _, r := range rows {
		if r.Stage == pairbench.StagePair && r.Outcome.Scored() {
			scored[fmt.Sprintf("%s/%d/%d", r.Intent, r.Pair, r.Attempt)]++
		}
	}
	for _, in := range plan.Intents {
		for _, p := range in.Pairs {
			complete := 0
			for k, n := range scored {
				if strings.HasPrefix(k, fmt.Sprintf("%s/%d/", in.ID, p.Pair)) && n == 2 {
					complete++
				}
				assert.LessOrEqual(t, n, 2, "attempt %s has more than one scored trial per arm", k)
			}
			assert.Equal(t, 1, complete, "complete attempts of %s pair %d", in.ID, p.Pair)
		}
	}
}

func TestExecuteRunsEveryPairInOrder(t *testing.T) {
	plan := execPlan(map[string]int{"a": 3, "b": 2}, map[string]string{"a": "d1", "b": "d2"})
	f := &fakeTrials{}
	ex := &Execution{Dir: rundir.RunDir{Path: t.TempDir()}, Plan: plan, Slots: 2, Trial: f.trial}
	require.NoError(t, ex.Run(context.Background()))
	rows := rowsOf(t, ex.Dir, rundir.RowsFile)
	assert.Len(t, rows, 10)
	scoredOnce(t, plan, rows)
	// Within each pair, the trials ran in the planned order.
	first := map[string]pairbench.Arm{}
	for _, s := range f.ran {
		k := fmt.Sprintf("%s/%d", s.Job.Intent, s.Job.Pair)
		if _, ok := first[k]; !ok {
			first[k] = s.Arm
			assert.Equal(t, s.Job.Order.Arms()[0], s.Arm, "pair %s starts with its order's first arm", k)
		}
	}
}

func TestExecuteRerunsAbortedPairWhole(t *testing.T) {
	plan := execPlan(map[string]int{"a": 2}, map[string]string{"a": "d1"})
	f := &fakeTrials{decide: func(s TrialSpec, n int) (pairbench.Outcome, bool, error) {
		// Pair 0's first trial aborts on attempt 1; pair 1 aborts on every attempt.
		if (s.Job.Pair == 0 && s.Job.Attempt == 1) || s.Job.Pair == 1 {
			return pairbench.Aborted, false, nil
		}
		return pairbench.Correct, true, nil
	}}
	ex := &Execution{Dir: rundir.RunDir{Path: t.TempDir()}, Plan: plan, Slots: 1, Trial: f.trial}
	require.NoError(t, ex.Run(context.Background()))
	rows := rowsOf(t, ex.Dir, rundir.RowsFile)
	var dirs []string
	for _, r := range rows {
		dirs = append(dirs, r.TrialDir)
	}
	assert.Equal(t, []string{
		"trials/a/0-control", // aborted, so treatment never ran
		"trials/a/0-control-2", "trials/a/0-treatment-2",
		"trials/a/1-treatment", "trials/a/1-treatment-2", // BA pair: both attempts aborted
	}, dirs)
}

func TestExecuteResumesAfterInterruptions(t *testing.T) {
	plan := execPlan(map[string]int{"a": 4, "b": 4, "c": 3}, map[string]string{"a": "d1", "b": "d1", "c": "d2"})
	dir := rundir.RunDir{Path: t.TempDir()}
	// Interrupt the run after every k-th trial, at many points, and resume
	// each time until nothing is pending.
	var total atomic.Int32
	for round := 0; round < 50; round++ {
		ctx, cancel := context.WithCancel(context.Background())
		stopAt := int32(round%5 + 1)
		var started atomic.Int32
		f := &fakeTrials{decide: func(s TrialSpec, n int) (pairbench.Outcome, bool, error) {
			total.Add(1)
			if started.Add(1) > stopAt {
				cancel()
				return "", false, fmt.Errorf("stopped: %w", ErrInterrupted)
			}
			if total.Load()%7 == 0 {
				return pairbench.Aborted, false, nil
			}
			return pairbench.Correct, true, nil
		}}
		// Aborts here are random, not the pair's fault: let every pair
		// retry until it is done.
		ex := &Execution{Dir: dir, Plan: plan, Slots: 2, PairAttempts: 1000, Trial: f.trial}
		err := ex.Run(ctx)
		cancel()
		if err == nil {
			break
		}
		require.ErrorIs(t, err, context.Canceled, "round %d", round)
	}
	ex := &Execution{Dir: dir, Plan: plan, Slots: 2, PairAttempts: 1000, Trial: (&fakeTrials{}).trial}
	require.NoError(t, ex.Run(context.Background()))
	rows := rowsOf(t, dir, rundir.RowsFile)
	scoredOnce(t, plan, rows)
	seen := map[string]bool{}
	for _, r := range rows {
		assert.False(t, seen[r.TrialDir], "trial dir %s used twice", r.TrialDir)
		seen[r.TrialDir] = true
	}
}

// TestExecuteGivesUpAPairThatUsedItsAttempts runs an intent (b) whose
// treatment always aborts beside one that works (a), then resumes the run twice: its pairs run their
// two attempts once, and no resume runs (and pays for) them again.
func TestExecuteGivesUpAPairThatUsedItsAttempts(t *testing.T) {
	plan := execPlan(map[string]int{"a": 2, "b": 2}, map[string]string{"a": "d1", "b": "d2"})
	dir := rundir.RunDir{Path: t.TempDir()}
	var trials atomic.Int32
	f := &fakeTrials{decide: func(s TrialSpec, n int) (pairbench.Outcome, bool, error) {
		trials.Add(1)
		if s.Job.Intent == "b" && s.Arm == pairbench.Treatment {
			return pairbench.Aborted, false, nil
		}
		return pairbench.Correct, true, nil
	}}
	for run := range 3 {
		ex := &Execution{Dir: dir, Plan: plan, Slots: 1, Trial: f.trial}
		require.NoError(t, ex.Run(context.Background()), "run %d", run)
	}
	rows := rowsOf(t, dir, rundir.RowsFile)
	broken := 0
	for _, r := range rows {
		if r.Intent == "b" {
			broken++
			assert.LessOrEqual(t, r.Attempt, rundir.DefaultPairAttempts)
		}
	}
	// Pair 0 (AB) runs control then the aborting treatment, pair 1 (BA)
	// only its aborting treatment: 2 attempts each, once.
	assert.Equal(t, 2*2+2*1, broken, "both attempts of each pair, run once")
	assert.EqualValues(t, 4+6, trials.Load(), "the resumes ran nothing")

	var specs []rundir.PairSpec
	for _, in := range plan.Intents {
		for _, p := range in.Pairs {
			specs = append(specs, rundir.PairSpec{Intent: in.ID, Domain: in.Domain, Pair: p.Pair, Order: p.Order})
		}
	}
	tally := rundir.NewTally(specs, rows)
	assert.Equal(t, 2, tally.GivenUp())
	assert.Zero(t, tally.Unfinished())
	intents, benched := tally.Benched()
	assert.ElementsMatch(t, []string{"a", "b"}, intents)
	assert.Equal(t, map[string]bool{"a": true, "b": false}, benched)
}

func TestExecuteAdoptionDropsDomainsThatNeverUseTools(t *testing.T) {
	plan := execPlan(map[string]int{"a": 2, "b": 2, "c": 2}, map[string]string{"a": "uses", "b": "ignores", "c": "broken"})
	f := &fakeTrials{decide: func(s TrialSpec, n int) (pairbench.Outcome, bool, error) {
		switch s.Job.Domain {
		case "ignores":
			return pairbench.Correct, false, nil
		case "broken":
			if s.Job.Stage == pairbench.StageAdoption {
				return pairbench.Aborted, false, nil
			}
		}
		return pairbench.Correct, true, nil
	}}
	ex := &Execution{Dir: rundir.RunDir{Path: t.TempDir()}, Plan: plan, Slots: 1, Adoption: 2, Trial: f.trial}
	require.NoError(t, ex.Run(context.Background()))
	rows := rowsOf(t, ex.Dir, rundir.RowsFile)
	pairsRun := map[string]int{}
	var adoptionDomains []string
	for _, r := range rows {
		if r.Stage == pairbench.StagePair {
			pairsRun[r.Domain]++
		} else {
			assert.Equal(t, pairbench.Treatment, r.Arm, "adoption trials are treatment only")
			adoptionDomains = append(adoptionDomains, r.Domain)
		}
	}
	assert.Equal(t, map[string]int{"uses": 4}, pairsRun)
	// Interleaved across domains, so one broken domain cannot use up the abort
	// limit alone; an aborted adoption trial runs once more at once.
	assert.Equal(t, []string{"uses", "ignores", "broken", "broken", "uses", "ignores", "broken", "broken"}, adoptionDomains)
}

func TestExecuteShardWritesItsOwnRows(t *testing.T) {
	plan := execPlan(map[string]int{"a": 5, "b": 4}, map[string]string{"a": "d", "b": "d"})
	dir := rundir.RunDir{Path: t.TempDir()}
	var all []pairbench.Row
	for k := 1; k <= 3; k++ {
		ex := &Execution{Dir: dir, Plan: plan, Slots: 2, Shard: k, Shards: 3, Trial: (&fakeTrials{}).trial}
		require.NoError(t, ex.Run(context.Background()))
		all = append(all, rowsOf(t, dir, rundir.RowsFileOf(k))...)
	}
	scoredOnce(t, plan, all)
	assert.NoFileExists(t, dir.File(rundir.RowsFile))
}

// TestExecuteReportsProgress follows a run through OnStart, OnRow and
// OnProgress: the counts come from the run's tally, rows of an earlier
// runner included.
func TestExecuteReportsProgress(t *testing.T) {
	plan := execPlan(map[string]int{"a": 3, "b": 2}, map[string]string{"a": "d1", "b": "d2"})
	dir := rundir.RunDir{Path: t.TempDir()}
	// An earlier runner finished pair a/0.
	first := &Execution{Dir: dir, Plan: plan, Slots: 1, Trial: (&fakeTrials{}).trial}
	ctx, cancel := context.WithCancel(context.Background())
	first.OnRow = func(r pairbench.Row) {
		if r.Intent == "a" && r.Pair == 0 && r.Arm != plan.Intents[0].Pairs[0].Order.Arms()[0] {
			cancel()
		}
	}
	require.ErrorIs(t, first.Run(ctx), context.Canceled)

	var (
		mu       sync.Mutex
		starts   int
		rows     int
		progress []rundir.Progress
	)
	f := &fakeTrials{decide: func(s TrialSpec, n int) (pairbench.Outcome, bool, error) {
		if s.Job.Intent == "b" && s.Job.Pair == 1 && s.Job.Attempt == 1 {
			return pairbench.Aborted, false, nil
		}
		return pairbench.Correct, true, nil
	}}
	ex := &Execution{Dir: dir, Plan: plan, Slots: 2, Trial: f.trial,
		OnStart:    func(TrialSpec) { starts++ }, // one at a time, so no lock
		OnProgress: func(p rundir.Progress) { progress = append(progress, p) },
		OnRow:      func(pairbench.Row) { mu.Lock(); rows++; mu.Unlock() },
	}
	require.NoError(t, ex.Run(context.Background()))
	require.NotEmpty(t, progress)
	assert.Equal(t, rundir.Progress{Started: progress[0].Started, Pairs: 5, Planned: 5, Done: 1}, progress[0], "the first count includes the earlier runner's pair")
	end := progress[len(progress)-1]
	assert.Equal(t, 5, end.Pairs)
	assert.Equal(t, 5, end.Done)
	assert.Equal(t, 1, end.Look, "a run of one look: its pairs are in force at once")
	assert.Equal(t, 1, end.Looks)
	assert.Nil(t, end.Stop)
	assert.Zero(t, end.Half)
	assert.Zero(t, end.Running)
	assert.Equal(t, rows, end.Trials)
	assert.Equal(t, starts, end.Trials, "every started trial was recorded")
	assert.Equal(t, 1, end.Aborts)
	assert.Equal(t, 9, end.Trials, "4 pairs, one of them run twice after its abort")
}

// TestTrialOfAnUnknownIntentIsAFault runs a trial of an intent the trials
// were not given: that is the caller's fault, which stops the run, not an
// aborted trial that would be rerun and paid for again.
func TestTrialOfAnUnknownIntentIsAFault(t *testing.T) {
	trials := &Trials{RunDir: rundir.RunDir{Path: t.TempDir()}, Plan: execPlan(map[string]int{"a": 1}, map[string]string{"a": "d"}), Intents: map[string]*TrialIntent{}}
	job := rundir.Job{Intent: "nope", Stage: pairbench.StagePair, Pair: 0, Order: pairbench.AB, Attempt: 1}
	row, err := trials.Run(context.Background(), TrialSpec{Job: job, Arm: pairbench.Control, Dir: rundir.TrialDir(job, pairbench.Control)})
	require.Error(t, err)
	assert.NotErrorIs(t, err, ErrInterrupted)
	assert.Empty(t, row.Outcome, "no outcome is recorded for it")
}

// TestExecuteKeepsToItsBudget runs pairs whose trials cost $0.01 each at a
// $0.01 spend cap, under a $0.07 budget of which the smoke gate spent
// $0.005, with one pair aborting once (its rerun counts): the run stops
// before the attempt that could pass the budget, having spent no more than
// it, and a resume with the same budget starts nothing.
func TestExecuteKeepsToItsBudget(t *testing.T) {
	plan := execPlan(map[string]int{"a": 6}, map[string]string{"a": "d"})
	plan.Caps = rundir.PlanCaps{TimeS: 60, Turns: 10, SpendUSD: 0.01}
	dir := rundir.RunDir{Path: t.TempDir()}
	f := &fakeTrials{decide: func(s TrialSpec, n int) (pairbench.Outcome, bool, error) {
		if s.Job.Pair == 0 && s.Job.Attempt == 1 && s.Arm == pairbench.Treatment {
			return pairbench.Aborted, false, nil
		}
		return pairbench.Correct, true, nil
	}}
	costly := func(ctx context.Context, spec TrialSpec) (pairbench.Row, error) {
		row, err := f.trial(ctx, spec)
		row.CostUSD = 0.01
		return row, err
	}
	budget := Budget{SpendUSD: 0.07}
	ex := &Execution{Dir: dir, Plan: plan, Slots: 2, Trial: costly, Budget: budget, OtherSpend: 0.005}
	err := ex.Run(context.Background())
	var be *BudgetError
	require.ErrorAs(t, err, &be)
	assert.Contains(t, err.Error(), "raise --budget-usd and run the same command to resume")
	spent := 0.005
	for _, r := range rowsOf(t, dir, rundir.RowsFile) {
		spent += r.CostUSD
	}
	assert.LessOrEqual(t, spent, 0.07+1e-9, "never past the budget")
	assert.Greater(t, spent, 0.04, "it ran what fitted")

	ran := len(f.ran)
	ex = &Execution{Dir: dir, Plan: plan, Slots: 2, Trial: costly, Budget: budget, OtherSpend: 0.005}
	require.ErrorAs(t, ex.Run(context.Background()), &be)
	assert.Len(t, f.ran, ran, "a resume counts what was spent: nothing starts")

	ex = &Execution{Dir: dir, Plan: plan, Slots: 2, Trial: costly, Budget: Budget{SpendUSD: 1}, OtherSpend: 0.005}
	require.NoError(t, ex.Run(context.Background()), "a larger budget resumes the run")
	scoredOnce(t, plan, rowsOf(t, dir, rundir.RowsFile))
}

// TestResumeOnBadInput resumes runs whose directory holds what no runner
// wrote: each gives a clear error naming the file and line, or is left out
// and counted, never a run that counts it as its own.
func TestResumeOnBadInput(t *testing.T) {
	plan := execPlan(map[string]int{"a": 2}, map[string]string{"a": "d"})
	good := func(pair int, arm pairbench.Arm) pairbench.Row {
		return pairbench.Row{V: pairbench.RowVersion, RunID: "r1", Intent: "a", Domain: "d", Stage: pairbench.StagePair, Pair: pair,
			Order: plan.Intents[0].Pairs[pair].Order, Arm: arm, Attempt: 1, Outcome: pairbench.Correct, TrialDir: fmt.Sprintf("trials/a/%d-%s", pair, arm)}
	}
	line := func(r pairbench.Row) string {
		b, err := pairbench.AppendRow(nil, r)
		require.NoError(t, err)
		return string(b)
	}
	future := strings.Replace(line(good(1, pairbench.Control)), `"v":1`, `"v":2`, 1)
	torn := line(good(1, pairbench.Control))[:40] + "\n"
	foreign := good(1, pairbench.Control)
	foreign.RunID = "r9"
	// Pair 1 with both arms scored, but run in the other order than planned.
	reversed := ""
	for _, arm := range []pairbench.Arm{pairbench.Control, pairbench.Treatment} {
		r := good(1, arm)
		r.Order = map[pairbench.Order]pairbench.Order{pairbench.AB: pairbench.BA, pairbench.BA: pairbench.AB}[r.Order]
		reversed += line(r)
	}
	pair0 := line(good(0, pairbench.Control)) + line(good(0, pairbench.Treatment))
	for name, c := range map[string]struct {
		rows string
		want string // the error; "" for none
		told string // the problem told, when no error
		// ran are the trial directories the resume ran (default pair 1's
		// first attempt).
		ran []string
	}{
		"a row of a future schema version": {rows: line(good(0, pairbench.Control)) + future, want: "rows.jsonl:2: unsupported row version 2"},
		"a torn middle line":               {rows: line(good(0, pairbench.Control)) + torn + line(good(0, pairbench.Treatment)), want: "rows.jsonl:2:"},
		"a row of another run":             {rows: pair0 + line(foreign), told: `left out 1 rows whose run_id is not "r1"`},
		"a pair run in the other order": {rows: pair0 + reversed, told: "left out 2 rows that ran their pair in another order than the plan's",
			ran: []string{"trials/a/1-control-2", "trials/a/1-treatment-2"}}, // attempt 1's directories are the left-out rows
		"a row beyond the plan": {rows: pair0 + strings.ReplaceAll(line(good(1, pairbench.Control))+line(good(1, pairbench.Treatment)), `"pair":1,`, `"pair":99,`),
			told: "left out 2 rows of pairs the plan does not have"},
	} {
		t.Run(name, func(t *testing.T) {
			dir := rundir.RunDir{Path: t.TempDir()}
			require.NoError(t, os.WriteFile(dir.File(rundir.RowsFile), []byte(c.rows), 0o644))
			f := &fakeTrials{}
			var problems []string
			ex := &Execution{Dir: dir, Plan: plan, Slots: 1, Trial: f.trial, OnProblem: func(p rundir.Problem) { problems = append(problems, p.String()) }}
			err := ex.Run(context.Background())
			if c.want != "" {
				assert.ErrorContains(t, err, c.want)
				assert.Empty(t, f.ran, "no trial runs on a rows file that does not read")
				return
			}
			require.NoError(t, err)
			assert.Contains(t, problems, dir.File(rundir.RowsFile)+": "+c.told)
			var ran []string
			for _, s := range f.ran {
				ran = append(ran, s.Dir)
			}
			want := c.ran
			if want == nil {
				want = []string{"trials/a/1-control", "trials/a/1-treatment"}
			}
			assert.ElementsMatch(t, want, ran, "pair 1 runs: the rows left out are not its")
		})
	}

	// A truncated run.json names where it ends.
	dir := rundir.RunDir{Path: t.TempDir()}
	require.NoError(t, dir.WritePlan(plan))
	b, err := os.ReadFile(dir.File(rundir.PlanFile))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(dir.File(rundir.PlanFile), b[:len(b)/2], 0o644))
	_, err = dir.ReadPlan()
	assert.ErrorContains(t, err, "run.json:")
	assert.ErrorContains(t, err, "unexpected end of JSON input")
}

// TestProgressHooksRunOutsideTheEngineLock: a hook that blocks (a
// terminal, a database) holds up the slot that called it, never the
// engine's count, and a progress taken before one already handed over is
// dropped.
func TestProgressHooksRunOutsideTheEngineLock(t *testing.T) {
	plan := execPlan(map[string]int{"a": 1}, map[string]string{"a": "d"})
	inHook, release := make(chan struct{}), make(chan struct{})
	var got []int
	ex := &Execution{Plan: plan, OnStart: func(TrialSpec) {
		close(inHook)
		<-release
	}, OnProgress: func(p rundir.Progress) { got = append(got, p.Running) }}
	f := &follower{ex: ex, tally: rundir.NewTallyLimit(plan.PairsInForce(), nil, 0)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f.started(TrialSpec{})
	}()
	<-inHook
	require.True(t, f.mu.TryLock(), "the hook runs outside the engine's lock")
	f.p.Running++ // another slot's start, counted while the hook runs
	p, n := f.take()
	f.mu.Unlock()
	close(release)
	<-done
	f.report(p, n)
	assert.Equal(t, []int{1, 2}, got, "each progress in order")

	f.report(rundir.Progress{Running: 1}, n-1)
	assert.Equal(t, []int{1, 2}, got, "an older progress is dropped")
}
