// Package bench runs a bench from a configuration to its report, the same
// way for every way in: `pairbench run` and `demo`, the service's local
// dispatcher, and the GitHub Action (through the CLI).
//
// Bench runs one from start to end. Its four steps are methods of Run, for
// callers that go step by step:
//
//	r, err := bench.Open(ctx, cfg) // read the registry, plan or resume the run, lock it
//	defer r.Close()
//	err = r.Smoke(ctx)             // the smoke gate; it freezes run.json
//	err = r.Execute(ctx)           // every pending trial, uploading as it goes
//	paths, err := r.Report(ctx)    // report.json, report.md, report.html, published
//
// What happens on the way reaches the caller through Config.Hooks: each
// trial as it starts, each row once it is on disk, the progress after each,
// and each problem that does not stop the bench. Everything that stops it is
// an error value: a registry with problems is a *RegistryError listing them
// (file:line), so a caller can print them or quote them in a comment.
//
// The package wires the runner to its adapters: the agent Config.Agent
// names (agent: pi, Claude Code or Codex), the browsers
// Config.Browser names (local Chromium, browser/local; Kernel's or
// another service's, browser/remote), and the scripted model
// (model) when the plan names it.
package bench

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/pairbench/pairbench/rundir"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/agent"
	"github.com/pairbench/pairbench/artifacts"
	"github.com/pairbench/pairbench/intents"
	"github.com/pairbench/pairbench/intents/config"
	"github.com/pairbench/pairbench/runner"
	"github.com/pairbench/pairbench/stats"
)

// Config is everything a bench is told.
type Config struct {
	// Registry is the registry directory or, with Git set, the registry's
	// path inside the repository ("" or "." for its root).
	Registry string
	// Git, when set, reads the registry from a git repository at a pinned
	// ref, without a checkout.
	Git *Git

	// RunID names the run; RunsDir holds its directory. An existing run of
	// the same id is resumed.
	RunID, RunsDir string
	// Store is where the run is uploaded as it is produced ("" keeps it
	// local only); see artifacts.Open.
	Store string

	// Intents selects intents by id or domain; empty means every intent
	// that is not stale.
	Intents []string
	// Arms are the two arms the bench compares (`--control`,
	// `--treatment`); the zero value is rundir.DefaultArms, no tools
	// against the registry's tools. An arm's tools@REV reads the registry
	// at REV of its repository (the registry directory's, or Git's).
	Arms rundir.PlanArms
	// Changes, a git revision (a pull request's base), benches what the
	// registry directory's working tree changed since its merge base with
	// it (what a pull request into it shows): each domain as
	// config.Comparisons chooses (tools changed: against its tools at
	// Changes; new, or its intents alone changed: against no tools); an
	// untouched domain is not benched, and a bench with nothing changed
	// fails with ErrNothingChanged. It sets Arms and Intents, which must
	// be left empty.
	Changes string
	// Pairs is the number of pairs per intent. A resume keeps the run's
	// pairs unless PairsGiven (--pairs was given): then more pairs top the
	// run up (rundir.Plan.TopUp) and fewer are refused.
	Pairs      int
	PairsGiven bool
	// Planning: see planning.go. With PairsAuto a new run's Pairs is the
	// fewest that detect Effect (stats.AutoPairs); RefuseUnreachable refuses
	// a new plan that can reach no label (pairbench run does, unless
	// --allow-inconclusive).
	PairsAuto         bool
	Effect            stats.Effect
	RefuseUnreachable bool
	// Looks is how many looks a new run takes at equal fractions of its
	// pairs (Design; docs/statistics.md, Looks): it stops at the first
	// that decides it. 0 or 1: one look, after every pair.
	Looks int
	// Agent names the agent benched in both arms (agent.Names; ""
	// means agent.Default). A run is benched with one agent: a resume
	// with another is refused, even with Force.
	Agent string
	// Model names the model both arms' agents use: ScriptedModel or
	// provider/id (see ParseModel); ModelURL overrides the provider's
	// endpoint.
	Model, ModelURL string
	Caps            rundir.PlanCaps
	// Judge chooses the judge of judged intents (judge.go).
	Judge JudgeSettings
	// Seed shuffles the pair orders and seeds the report's bootstrap.
	Seed uint64
	// Alpha is the two-sided significance level of the labels.
	Alpha float64
	// Force resumes a run whose plan changed.
	Force bool

	// Slots is how many jobs run at once.
	Slots int
	// Shard and Shards select this runner's pairs of a run split across
	// runners (1-based; 0 for the whole run).
	Shard, Shards int
	// Adoption is how many treatment-only adoption trials each domain runs
	// before its pairs; 0 skips the stage.
	Adoption int
	// StartDelay is how long after the start page loaded the agent starts,
	// and Settle Playwright MCP's settle wait after each action, in both
	// arms.
	StartDelay, Settle time.Duration
	// Budget is what the whole run may use; the smoke gate refuses a plan
	// whose trials could exceed it at their caps.
	Budget runner.Budget

	// Browser is where the trials' browsers run: local Chromium (the
	// zero value), Kernel, or a service that hands out CDP websocket URLs.
	Browser Browsers

	// Tools is the node_modules directory of the pinned Node tools (Node,
	// the agents, Playwright MCP); Chromium the local browsers' binary
	// (local.DefaultChromiumPath when empty).
	Tools, Chromium string
	// Hosts maps site host names to IP:PORT addresses for the browser
	// (ParseHosts); CACerts are CAs it trusts for the run beyond the
	// system's (ReadCACerts); Origins point the registry's intents and
	// tools at other origins for the run (ParseOrigins).
	Hosts   map[string]string
	CACerts []*x509.Certificate
	Origins []Origin
	// ExampleSites serves pairbench's example sites on loopback for the
	// bench's life and maps their hosts (books.example, weather.example).
	ExampleSites bool
	// TempDir holds the per-trial sandbox, egress and browser profile
	// directories; those killed runners left there are removed.
	TempDir string
	// Link is the full report's URL, linked from report.md.
	Link string
	// PlanOnly makes Bench stop once the plan is frozen and stored: the
	// plan job of a run spread over runners. With a Store it takes the
	// stored plan alone, not the rows, so it plans (or, with more Pairs,
	// tops up) a run already split across runners, deciding where the run
	// stopped from every shard's stored rows.
	PlanOnly bool
	// Resume refuses to plan a new run: the run RunID must be in its run
	// directory or in the Store already, and is resumed (topped up with
	// more Pairs). A resume that would find nothing fails with
	// ErrNothingToResume, before anything is written.
	Resume bool

	// Log receives the bench's diagnostics and a record per trial.
	Log *slog.Logger
	// Hooks see the bench as it goes.
	Hooks Hooks
}

// Git locates a registry in a git repository.
type Git struct {
	// Repo is the repository (a URL or a path) and Ref the branch, tag or
	// commit to read.
	Repo, Ref string
	// PR is the pull request whose last head is read when Ref is a deleted
	// branch (0: none).
	PR int
	// Cache is the bare repository fetches go through.
	Cache string
}

// Hooks see a bench as it goes. Each may be nil. Start, Row and Progress
// are called from the slots' goroutines and must return quickly: Start and
// Progress one call at a time, Row possibly at the same time as others
// (see runner.Execution).
type Hooks struct {
	// Start sees each trial as it starts.
	Start func(runner.TrialSpec)
	// Row sees each trial's row once it is on disk.
	Row func(pairbench.Row)
	// Progress sees the run's progress after each start and row.
	Progress func(rundir.Progress)
	// Problem sees each thing that goes wrong without stopping the bench;
	// without it, problems are logged as warnings.
	Problem func(rundir.Problem)
	// Step sees the bench pass each point of its way (see StepName), from
	// the goroutine at that point, as it passes it: what a bench killed at
	// that moment leaves is what a resume must cope with.
	Step func(Step)
}

// Step is a point a bench passes: what it is about to do or has just done.
type Step struct {
	Name StepName
	// Trial is the trial the step is of (StepAgent, StepTrialEnd, StepRow).
	Trial *runner.TrialSpec
	// File names the file the step is about: a report file written (its
	// path), a store key about to be uploaded.
	File string
}

// StepName names a point of a bench's way, in the order a bench passes them.
type StepName string

const (
	// StepSmokeGate: the smoke gate starts (a new run, or one planned
	// elsewhere); its checks run after it.
	StepSmokeGate StepName = "smoke-gate"
	// StepFreezing: the gate passed, run.json is about to be written;
	// StepFrozen: it is on disk.
	StepFreezing StepName = "freezing"
	StepFrozen   StepName = "frozen"
	// StepWarmUp: the agent's warm-up starts; it runs after it.
	// StepWarmedUp: it ended (done or failed), and the trials start.
	StepWarmUp   StepName = "warm-up"
	StepWarmedUp StepName = "warmed-up"
	// StepAgent: a trial's agent began its first turn; it runs on, its
	// browser open.
	StepAgent StepName = "agent"
	// StepTrialEnd: a trial ended and its row is about to be written;
	// StepRow: the row is on disk (fsynced).
	StepTrialEnd StepName = "trial-end"
	StepRow      StepName = "row"
	// StepReportFile: one of the report's files was written.
	StepReportFile StepName = "report-file"
	// StepUpload: a file's upload to the store is under way, half its
	// bytes read by the store (artifacts.Syncer.OnUpload).
	StepUpload StepName = "upload"
)

// step tells the Step hook, if any.
func (r *Run) step(s Step) {
	if r.cfg.Hooks.Step != nil {
		r.cfg.Hooks.Step(s)
	}
}

// RegistryError is the error of a bench whose registry has problems. It
// unwraps to the intents.Problems, each "file:line: message" with the file
// named as the registry's source names it (the path inside the repository
// for a registry read from git). Its message is a line that says so, then
// the problems, one per line (the first maxQuoted), so wherever the error
// is shown (a terminal, a pull request's comment) they are too.
type RegistryError struct {
	// Registry names the registry: its directory, or for a registry read
	// from git "commit <id>".
	Registry string
	// Git is true for a registry read from git, which has no directory to
	// validate.
	Git      bool
	Problems intents.Problems
}

// maxQuoted bounds the problems a RegistryError's message lists.
const maxQuoted = 50

func (e *RegistryError) Error() string {
	var b strings.Builder
	if e.Git {
		fmt.Fprintf(&b, "the registry at %s has %d problem(s):", e.Registry, len(e.Problems))
	} else {
		fmt.Fprintf(&b, "the registry %s has %d problem(s); `pairbench validate %[1]s` lists them:", e.Registry, len(e.Problems))
	}
	for i, p := range e.Problems {
		if i == maxQuoted {
			fmt.Fprintf(&b, "\n  ... and %d more", len(e.Problems)-maxQuoted)
			break
		}
		b.WriteString("\n  " + p.String())
	}
	return b.String()
}

func (e *RegistryError) Unwrap() error { return e.Problems }

// Run is one opened bench: a run directory held by this process, its plan,
// and what its trials need. Its methods are called in order, from one
// goroutine: Smoke, Execute, Report, and Close in every case.
type Run struct {
	cfg  Config
	log  *slog.Logger
	dir  rundir.RunDir
	plan *rundir.Plan
	// fresh is true for a run planned here; adopted for one whose plan was
	// fetched from the store. Either way the smoke gate has not passed here.
	fresh, adopted bool
	smoked         bool
	// status is the run's status as its last report found it.
	status *rundir.Status
	// alsoNone lists the domains benched against base that compare: both
	// also benches against no tools, in a run of its own after this one
	// (Bench); the plan records them (rundir.Plan.AlsoAgainstNone).
	alsoNone []string
	// smokeCost is what this runner's smoke gate cost.
	smokeCost float64

	hosts map[string]string // the browser's host mappings
	store artifacts.Store   // nil without one
	sync  *artifacts.Syncer // nil without a store
	// leaseLost hears that another runner took the run's lease over (nil
	// without a store).
	leaseLost chan error
	trials    *runner.Trials
	agent     agent.Agent
	// agentName is the agent benched; harness the tools its CLI always
	// declares beside the allowlist.
	agentName string
	harness   []string
	closers   []func() error // in the order acquired
}

// Dir returns the run directory.
func (r *Run) Dir() rundir.RunDir { return r.dir }

// Resumed reports whether the run existed before Open: its run.json was
// frozen by an earlier runner of this run directory.
func (r *Run) Resumed() bool { return !r.fresh && !r.adopted }

// Close releases what the run holds, the run directory's lock last, and
// removes the temporary directories no live runner holds. Close may be
// called more than once.
func (r *Run) Close() error {
	var errs []error
	for i := len(r.closers) - 1; i >= 0; i-- {
		errs = append(errs, r.closers[i]())
	}
	r.closers = nil
	return errors.Join(errs...)
}

// onClose adds a release to run at Close.
func (r *Run) onClose(f func() error) { r.closers = append(r.closers, f) }

// problem shows p through the Problem hook, or logs it.
func (r *Run) problem(p rundir.Problem) {
	if r.cfg.Hooks.Problem != nil {
		r.cfg.Hooks.Problem(p)
		return
	}
	r.log.Warn(p.Msg, p.LogArgs()...)
}

// problems shows each of ps, in order (problem).
func (r *Run) problems(ps []rundir.Problem) {
	for _, p := range ps {
		r.problem(p)
	}
}

// Result is what a bench left.
type Result struct {
	// Dir is the run directory; zero when the bench did not get as far as
	// taking it.
	Dir rundir.RunDir
	// Reports are the report files written, in the order written: none for
	// a plan-only bench, a shard, or an interrupted run.
	Reports []string
	// AgainstNone is the second comparison of a bench of changes whose
	// configuration asks for both (compare: both): the domains it benched
	// against base, benched against no tools in run config.AgainstNoneRunID
	// (planned alone for a plan-only bench, the same shard for a shard);
	// nil when there is none.
	AgainstNone *Result
}

// Bench runs the bench cfg describes from start to end: Open, Smoke and,
// for a plan-only bench, an upload of the plan; else Execute and, for a run
// that is not a shard and was not interrupted, Report. A report is written
// even when the run stopped on too many aborts; the error then says so. The
// Result holds what the bench got as far as, with or without an error.
//
// A bench of changes whose configuration asks for both comparisons
// (compare: both) then benches the domains it benched against base against
// no tools too, in run config.AgainstNoneRunID, the same way: planned
// alone for a plan-only bench, the same shard of it for a shard, whole and
// reported for a whole run (Result.AgainstNone).
func Bench(ctx context.Context, cfg Config) (Result, error) {
	res, alsoNone, err := benchOne(ctx, cfg)
	if len(alsoNone) == 0 || err != nil {
		return res, err
	}
	none := cfg
	none.RunID, none.Changes, none.Intents, none.Arms = config.AgainstNoneRunID(cfg.RunID), "", alsoNone, rundir.PlanArms{}
	if cfg.Log != nil {
		cfg.Log.Info("compare: both: benching against no tools too", "run", none.RunID, "domains", alsoNone)
	}
	second, err := Bench(ctx, none)
	res.AgainstNone = &second
	if err != nil {
		return res, fmt.Errorf("compare: both: the run against no tools (%s): %w", none.RunID, err)
	}
	return res, nil
}

// benchOne is Bench of one run: it returns, beside what Bench does, the
// domains (or named intents) compare: both benches against no tools too.
func benchOne(ctx context.Context, cfg Config) (Result, []string, error) {
	r, err := Open(ctx, cfg)
	if err != nil {
		return Result{}, nil, err
	}
	defer r.Close()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	r.stopOnLostLease(ctx, cancel)
	res := Result{Dir: r.Dir()}
	if err := r.Smoke(ctx); err != nil {
		return res, nil, err
	}
	if cfg.PlanOnly {
		if err := r.finalUpload(ctx); err != nil {
			return res, nil, fmt.Errorf("store the plan: %w", err)
		}
		return res, r.alsoNone, nil
	}
	runErr := r.Execute(ctx)
	if cause := context.Cause(ctx); errors.Is(cause, rundir.ErrLeaseLost) {
		// Stopped because another runner has the run now: say so, not
		// "context canceled", so the service's check run says it too.
		runErr = fmt.Errorf("stopped: %w", cause)
	}
	if runErr != nil && ctx.Err() != nil {
		return res, nil, errors.Join(runErr, r.finalUpload(ctx))
	}
	if cfg.Shards > 0 {
		if runErr == nil {
			r.log.Info("shard done; merge the shards with `pairbench merge`", "shard", fmt.Sprintf("%d/%d", cfg.Shard, cfg.Shards))
		}
		return res, r.alsoNone, errors.Join(runErr, r.finalUpload(ctx))
	}
	res.Reports, err = r.Report(ctx)
	err = errors.Join(err, runErr)
	if r.status != nil && len(r.status.NotBenched) > 0 && runErr == nil {
		err = errors.Join(err, &NotBenchedError{Intents: r.status.NotBenched})
	}
	return res, r.alsoNone, err
}

// NotBenchedError is the error of a bench that ran to its end with intents
// it could not bench: every pair of each aborted in every attempt (a
// treatment setup that always fails, say). The report names them too.
type NotBenchedError struct {
	Intents []string
}

func (e *NotBenchedError) Error() string {
	return fmt.Sprintf("%d intent(s) could not be benched, every pair aborted in every attempt (the report's per-intent details say why): %s",
		len(e.Intents), strings.Join(e.Intents, ", "))
}
