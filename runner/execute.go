package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/pairbench/pairbench/rundir"

	"github.com/pairbench/pairbench"
)

// TrialSpec is one trial attempt of a job.
type TrialSpec struct {
	Job rundir.Job
	Arm pairbench.Arm
	// Dir is the trial's directory relative to the run directory (see
	// TrialDir).
	Dir string
}

// ErrInterrupted is what a TrialFunc returns when its context ended before
// the trial could finish: the trial is not recorded, and a resume runs its
// pair again.
var ErrInterrupted = errors.New("trial interrupted")

// TrialFunc runs one trial and returns its row. Everything that can happen
// to a trial, setup failures included, is an outcome in the row; the error
// is ErrInterrupted (wrapped) when ctx ended first, or a fault that should
// stop the whole run (ErrDiskFull, wrapped, for a full disk; see
// Trials.Run).
type TrialFunc func(ctx context.Context, spec TrialSpec) (pairbench.Row, error)

// Execution is one runner's share of a planned run.
type Execution struct {
	// Dir is the local run directory, holding run.json.
	Dir  rundir.RunDir
	Plan *rundir.Plan
	// Slots is how many jobs run at once.
	Slots int
	// Shard and Shards select this runner's pairs (1-based); 0 means the
	// whole run. A shard's rows go to shards/<k>/rows.jsonl.
	Shard, Shards int
	// Peers, for a shard whose shards meet in a store, returns the rows the
	// other shards have stored so far: the shard then takes the looks with
	// them and stops where the whole run would (runLooks). Nil: a shard
	// runs its share of every look.
	Peers func(ctx context.Context) ([]pairbench.Row, error)
	// lookWait, when set (tests), replaces a shard's wait at a look.
	lookWait time.Duration
	// Adoption is how many treatment-only adoption trials each domain runs
	// before its pairs; 0 skips the stage.
	Adoption int
	// PairAttempts bounds how many attempts of a pair (or adoption trial)
	// may abort, over every runner of the run, before it is given up; 0
	// means DefaultPairAttempts (the first run and one rerun).
	PairAttempts int
	Trial        TrialFunc
	// Budget is what this runner's share of the run may use in all,
	// enforced while it runs: spend over every row of its rows file (every
	// attempt, reruns and earlier runners' included) plus OtherSpend (the
	// smoke gates'), and wall time from the start of this execution. A
	// pair's attempt starts only if its trials fit at their caps, so the
	// budget is never passed (the caps are hard); when the next does not
	// fit, the run stops with a *BudgetError.
	Budget     Budget
	OtherSpend float64
	Log        *slog.Logger
	// OnProblem, if set, sees what goes wrong without stopping the run;
	// without it, problems are logged as warnings.
	OnProblem func(rundir.Problem)
	// OnStart, if set, sees every trial as it starts, and OnProgress the
	// progress after every start and row. They are called from the slots'
	// goroutines, one at a time and outside the engine's lock; a progress
	// older than one handed over already is dropped. The slot that calls
	// one waits for it, so they should return quickly.
	OnStart    func(TrialSpec)
	OnProgress func(rundir.Progress)
	// OnRow, if set, sees every row once it is on disk (uploads, logs),
	// from the slot's goroutine that ran the trial: calls from different
	// slots may overlap, and the slot waits for it.
	OnRow func(pairbench.Row)
	// OnTrialEnd, if set, sees each trial that ended, with its row, just
	// before the row is written (from the slot's goroutine).
	OnTrialEnd func(TrialSpec, pairbench.Row)

	spend *spending
}

// spending follows an execution's budget: what was spent, and what the
// trials under way may still spend at their caps.
type spending struct {
	budget  Budget
	caps    Caps
	started time.Time

	mu          sync.Mutex
	spent, held float64
	heldTime    time.Duration // the attempts under way, at their caps
}

// hold holds n trials at their caps against the budget, or fails with a
// *BudgetError when they do not fit.
func (s *spending) hold(n int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	need := float64(n) * s.caps.SpendUSD
	if b := s.budget.SpendUSD; b > 0 && s.caps.SpendUSD > 0 && s.spent+s.held+need > b+1e-12 {
		return &BudgetError{Budget: b, Spent: s.spent, Held: s.held, Need: need}
	}
	needTime := time.Duration(n) * (s.caps.Time + SetupAllowance)
	if b := s.budget.Time; b > 0 && s.caps.Time > 0 && time.Since(s.started)+needTime > b {
		return &BudgetError{Time: b, Elapsed: time.Since(s.started), NeedTime: needTime}
	}
	s.held += need
	return nil
}

// spend records one held trial's cost.
func (s *spending) spend(cost float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.spent += cost
	s.held = max(0, s.held-s.caps.SpendUSD)
}

// release lets go of n held trials that did not run.
func (s *spending) release(n int) {
	if n <= 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.held = max(0, s.held-float64(n)*s.caps.SpendUSD)
}

// BudgetError stops a run whose next attempt does not fit in its budget at
// its caps. Raising the budget and running the same command resumes it.
type BudgetError struct {
	// Budget, Spent, Held and Need are in USD: the budget, what the run
	// spent (every attempt, the smoke gates'), what the trials under way
	// may still spend, and what the next attempt may.
	Budget, Spent, Held, Need float64
	// Time, Elapsed and NeedTime are the same for wall time.
	Time, Elapsed, NeedTime time.Duration
}

func (e *BudgetError) Error() string {
	if e.Time > 0 {
		return fmt.Sprintf("budget: %s of the %s --budget-time is gone, and the next pair may take %s at its caps; raise --budget-time and run the same command to resume",
			e.Elapsed.Round(time.Second), e.Time, e.NeedTime)
	}
	return fmt.Sprintf("budget: $%.4f of the $%.4f --budget-usd is spent and $%.4f held by trials under way, and the next pair may spend $%.4f at its caps; raise --budget-usd and run the same command to resume",
		e.Spent, e.Budget, e.Held, e.Need)
}

// follower counts an execution's progress and calls its hooks. The count
// is under mu, the engine's lock, which no hook is called under: a hook
// that writes to a terminal or a database holds up the slot that called
// it, never the count of the others.
type follower struct {
	ex    *Execution
	mu    sync.Mutex
	tally *rundir.Tally
	p     rundir.Progress
	taken int // progresses taken (under mu)

	hooks sync.Mutex // held by the one hook call at a time
	shown int        // the last progress handed to OnProgress (under hooks)
}

func (f *follower) started(spec TrialSpec) {
	f.mu.Lock()
	f.p.Running++
	p, n := f.take()
	f.mu.Unlock()
	f.hooks.Lock()
	defer f.hooks.Unlock()
	if f.ex.OnStart != nil {
		f.ex.OnStart(spec)
	}
	f.show(p, n)
}

func (f *follower) recorded(row pairbench.Row) {
	f.mu.Lock()
	f.p.Running--
	f.p.Trials++
	f.p.Spend += row.SpendUSD()
	if row.Outcome == pairbench.Aborted {
		f.p.Aborts++
	}
	f.tally.Add(row)
	p, n := f.take()
	f.mu.Unlock()
	f.report(p, n)
	if f.ex.OnRow != nil {
		f.ex.OnRow(row)
	}
}

// take returns the progress now and its number; f.mu is held.
func (f *follower) take() (rundir.Progress, int) {
	f.p.Pairs, f.p.Done, f.p.Half = f.tally.Pairs(), f.tally.Done(), f.tally.Half()
	f.taken++
	return f.p, f.taken
}

// look makes the progress count look k of n, whose pairs in force t
// tallies, of planned pairs in all.
func (f *follower) look(t *rundir.Tally, k, n, planned int) {
	f.mu.Lock()
	f.tally = t
	f.p.Look, f.p.Looks, f.p.Planned = k, n, planned
	p, c := f.take()
	f.mu.Unlock()
	f.report(p, c)
}

// stopped records the look the run stopped at.
func (f *follower) stopped(stop *rundir.LookStop) {
	f.mu.Lock()
	f.p.Stop = stop
	p, c := f.take()
	f.mu.Unlock()
	f.report(p, c)
}

// report hands p, the nth progress taken, to OnProgress.
func (f *follower) report(p rundir.Progress, n int) {
	f.hooks.Lock()
	defer f.hooks.Unlock()
	f.show(p, n)
}

// show hands p, the nth progress taken, to OnProgress unless a later one
// was handed over first (the slots race to their calls); f.hooks is held.
func (f *follower) show(p rundir.Progress, n int) {
	if n <= f.shown || f.ex.OnProgress == nil {
		return
	}
	f.shown = n
	f.ex.OnProgress(p)
}

// RowsFile returns the run-relative rows file this execution appends to.
func (ex *Execution) RowsFile() string { return rundir.RowsFileOf(ex.Shard) }

// Pairs returns the planned pairs in force (Plan.PairsInForce) of this
// execution's shard.
func (ex *Execution) Pairs() ([]rundir.PairSpec, error) {
	pairs := ex.Plan.PairsInForce()
	if ex.Shards == 0 {
		return pairs, nil
	}
	return rundir.Shard(pairs, ex.Shard, ex.Shards)
}

// Run runs every pending job of the execution: the adoption stage first,
// then every pair in force lacking a scored trial in either arm, look by
// look, until a look stops the run (runLooks). Rows already in the rows
// file are kept and counted; Run can be called again on the same
// directory to resume. It returns ctx's error when interrupted,
// ErrTooManyAborts when trials keep aborting, a trial's fault, or a
// *TrialError of RowStep (wrapped; with ErrDiskFull for a full disk)
// when a row could not be appended.
func (ex *Execution) Run(ctx context.Context) error {
	if ex.Slots < 1 {
		return fmt.Errorf("slots = %d; want at least 1", ex.Slots)
	}
	log := ex.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	problem := ex.OnProblem
	if problem == nil {
		problem = func(p rundir.Problem) { log.Warn(p.Msg, p.LogArgs()...) }
	}
	var all []pairbench.Row
	read, err := ex.Dir.ScanRows(rundir.RowQuery{File: ex.RowsFile()}, func(r *pairbench.Row) { all = append(all, *r) })
	for _, p := range read.Warnings {
		problem(p)
	}
	if err != nil {
		return err
	}
	// A row that is not a trial of the plan (another run's, a pair the plan
	// does not have or ran in another order, a repeat) would count as one:
	// it is left out, and counted, so that its pair runs.
	// The attempts of this run's rows left out stay used: a rerun never
	// writes into their trial directories.
	judge := rundir.NewPlanRows(ex.Plan)
	var rows, left []pairbench.Row
	for i := range all {
		switch r := all[i]; {
		case judge.Keep(&r):
			rows = append(rows, r)
		case r.RunID == "" || r.RunID == ex.Plan.RunID:
			left = append(left, r)
		}
	}
	for _, p := range judge.Warnings(ex.Dir.File(ex.RowsFile())) {
		problem(p)
	}
	tally := func(pairs []rundir.PairSpec, rows []pairbench.Row) *rundir.Tally {
		t := rundir.NewTallyLimit(pairs, rows, ex.PairAttempts)
		for _, r := range left {
			t.Reserve(r)
		}
		return t
	}
	rl, err := ex.Dir.OpenRowLog(ex.Shard)
	if err != nil {
		return err
	}
	defer rl.Close()

	pairs, err := ex.Pairs()
	if err != nil {
		return err
	}
	f := &follower{ex: ex, tally: tally(pairs, rows)}
	ex.spend = &spending{budget: ex.Budget, caps: BudgetCaps(ex.Plan), spent: ex.OtherSpend, started: time.Now()}
	for _, r := range rows {
		ex.spend.spent += r.SpendUSD()
	}
	f.p = rundir.Progress{Started: time.Now(), Planned: f.tally.Pairs(), Notional: ex.Plan.Model.Scripted, Stop: ex.Plan.Stop}
	f.mu.Lock()
	p, n := f.take()
	f.mu.Unlock()
	f.report(p, n)

	if ex.Adoption > 0 {
		jobs := rundir.AdoptionJobs(ex.Plan, pairs, ex.Adoption, rows, ex.attempts())
		if len(jobs) > 0 {
			log.Info("adoption stage", "trials", len(jobs))
			fresh, err := ex.runJobs(ctx, rl, f, jobs)
			rows = append(rows, fresh...)
			if err != nil {
				return err
			}
		}
		var dropped []string
		pairs, dropped = rundir.AdoptedPairs(pairs, rows)
		for _, d := range dropped {
			problem(rundir.Problem{Msg: "domain gets no pairs: no adoption trial invoked a tool", Attrs: []any{"domain", d}})
		}
	}

	return ex.runLooks(ctx, log, pairs, rows, lookRun{
		tally: tally,
		run:   func(jobs []rundir.Job) ([]pairbench.Row, error) { return ex.runJobs(ctx, rl, f, jobs) },
		follow: func(look []rundir.PairSpec, rows []pairbench.Row, k, n int) {
			f.look(tally(look, rows), k, n, len(pairs))
		},
		stopped: f.stopped,
	})
}

// runJobs runs jobs over the slots and returns the rows it recorded.
func (ex *Execution) runJobs(ctx context.Context, rl *rundir.RowLog, f *follower, jobs []rundir.Job) ([]pairbench.Row, error) {
	var (
		mu    sync.Mutex
		fresh []pairbench.Row
	)
	record := func(row pairbench.Row) error {
		if err := rl.Append(row); err != nil {
			return err
		}
		mu.Lock()
		fresh = append(fresh, row)
		mu.Unlock()
		f.recorded(row)
		return nil
	}
	err := RunQueue(ctx, ex.Slots, jobs, func(ctx context.Context, job rundir.Job) ([]bool, error) {
		var aborted []bool
		arms := job.Order.Arms()
		if job.Stage == pairbench.StageAdoption {
			arms = [2]pairbench.Arm{pairbench.Treatment}
		}
		trials := 0
		for _, arm := range arms {
			if arm != "" {
				trials++
			}
		}
		for try := range max(job.Tries, 1) {
			job := job
			job.Attempt += try
			// The attempt's trials are held against the budget at their
			// caps before the first starts.
			if err := ex.spend.hold(trials); err != nil {
				return aborted, err
			}
			ran := 0
			complete := true
			for _, arm := range arms {
				if arm == "" {
					continue
				}
				spec := TrialSpec{Job: job, Arm: arm, Dir: rundir.TrialDir(job, arm)}
				f.started(spec)
				row, err := ex.Trial(ctx, spec)
				ran++
				if err != nil {
					ex.spend.release(trials - ran + 1)
					return aborted, err
				}
				ex.spend.spend(row.SpendUSD())
				if ex.OnTrialEnd != nil {
					ex.OnTrialEnd(spec, row)
				}
				if err := record(row); err != nil {
					ex.spend.release(trials - ran)
					return aborted, appendError(spec, err)
				}
				aborted = append(aborted, row.Outcome == pairbench.Aborted)
				if row.Outcome == pairbench.Aborted {
					// The pair runs again whole, both trials in order, so
					// its trials stay consecutive.
					complete = false
					break
				}
			}
			ex.spend.release(trials - ran)
			if complete {
				break
			}
		}
		return aborted, nil
	})
	if errors.Is(err, ErrInterrupted) && ctx.Err() != nil {
		err = ctx.Err()
	}
	return fresh, err
}

// appendError is the error of spec's row that could not be appended: a
// *TrialError of the row step, which stops the run, with ErrDiskFull
// beside it when the disk is full.
func appendError(spec TrialSpec, err error) error {
	te := &TrialError{Step: RowStep, Err: err}
	if DiskFull(err) {
		return fmt.Errorf("%s: %w: %w", spec.Dir, ErrDiskFull, te)
	}
	return fmt.Errorf("%s: %w", spec.Dir, te)
}

// attempts is the execution's attempt limit.
func (ex *Execution) attempts() int {
	if ex.PairAttempts > 0 {
		return ex.PairAttempts
	}
	return rundir.DefaultPairAttempts
}
