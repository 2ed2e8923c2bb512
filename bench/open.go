package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/pairbench/pairbench/rundir"

	"github.com/pairbench/pairbench/agent"
	"github.com/pairbench/pairbench/artifacts"
	"github.com/pairbench/pairbench/browser/local"
	"github.com/pairbench/pairbench/grade"
	"github.com/pairbench/pairbench/intents"
	"github.com/pairbench/pairbench/runner"
)

// Open opens the bench cfg describes: it checks the agent, the model and
// its key (one line, before anything is read or written), reads the registry (a
// *RegistryError lists its problems), takes the run directory's lock, plans
// the run or resumes the one already there (taking a plan a --plan-only
// runner stored, for a shard), and readies the agent, the browsers and,
// for the scripted model, the model. It starts no trial and writes no
// run.json: Smoke does. On error it holds nothing.
func Open(ctx context.Context, cfg Config) (_ *Run, err error) {
	log := cfg.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	// Bad input is refused before anything is read or written.
	name, m, err := cfg.checkParts()
	if err != nil {
		return nil, err
	}
	r := &Run{cfg: cfg, log: log, dir: rundir.RunDir{Path: filepath.Join(cfg.RunsDir, cfg.RunID)}, hosts: cfg.Hosts,
		agentName: name, harness: agent.HarnessTools(name)}
	defer func() {
		if err != nil {
			r.Close()
		}
	}()
	// A runner killed with SIGKILL could not remove its directories (its
	// browsers and sandboxes died with it); its successors do, at start and
	// again at exit for the ones too young to be sure of at start.
	r.cleanLeftovers()
	r.onClose(func() error { r.cleanLeftovers(); return nil })

	reg, source, err := r.readRegistry(ctx)
	if err != nil {
		return nil, err
	}
	if err := runner.CheckIntentNames(reg, cfg.Intents); err != nil {
		return nil, err
	}
	if cfg.ExampleSites {
		if err := r.serveExampleSites(); err != nil {
			return nil, err
		}
	}
	if err := r.pointAtOrigins(ctx, reg); err != nil {
		return nil, err
	}
	tools := newTools(cfg.Tools)
	versions, err := tools.versions(ctx, name, cfg.Browser, cmp.Or(cfg.Chromium, local.DefaultChromiumPath))
	if err != nil {
		return nil, err
	}

	if cfg.Store != "" {
		if r.store, err = artifacts.Open(ctx, cfg.Store); err != nil {
			return nil, err
		}
		if err := r.dir.CheckStore(r.store, cfg.RunID); err != nil {
			return nil, err
		}
	}
	if err := r.lock(); err != nil {
		return nil, err
	}
	if r.store != nil {
		if err := r.takeLease(ctx); err != nil {
			return nil, err
		}
		// The store and the directory are one run: what the store holds
		// (the plan, this runner's rows) comes into the directory first, so
		// a runner on a fresh machine resumes it, and no upload replaces
		// rows it did not read.
		var warnings []rundir.Problem
		if cfg.PlanOnly {
			// No trials run here: the plan alone, of a run split across
			// runners or not.
			r.adopted, err = r.dir.ReconcilePlan(ctx, r.store, cfg.RunID)
		} else {
			r.adopted, warnings, err = r.dir.Reconcile(ctx, r.store, cfg.RunID, cfg.Shard, cfg.Shards)
		}
		r.problems(warnings)
		if err != nil {
			return nil, err
		}
		if r.sync, err = r.dir.Syncer(r.store, cfg.RunID, cfg.Shard); err != nil {
			return nil, err
		}
		r.sync.OnUpload(func(key string) { r.step(Step{Name: StepUpload, File: key}) })
	} else if err := r.dir.CheckLayout(cfg.Shard, cfg.Shards); err != nil {
		return nil, err
	}

	arms, againstNone := cmpArms(cfg.Arms), []string(nil)
	if cfg.Changes != "" {
		if arms, againstNone, err = r.applyChanges(ctx, reg, source); err != nil {
			return nil, err
		}
	}
	revs, arms, err := r.readRevs(ctx, arms)
	if err != nil {
		return nil, err
	}
	policy := r.browserPolicy()
	opts := runner.PlanOptions{RunID: cfg.RunID, Intents: r.cfg.Intents, Pairs: cfg.Pairs, Model: m, Caps: cfg.Caps,
		Seed: cfg.Seed, Alpha: cfg.Alpha, Versions: versions, Now: time.Now(), Source: source, HarnessTools: r.harness,
		Browser: &policy, Trial: rundir.TrialSettings{StartDelayMS: cfg.StartDelay.Milliseconds(), SettleMS: cfg.Settle.Milliseconds(), Adoption: cfg.Adoption},
		Arms: arms, Revs: revs, AgainstNone: againstNone, AlsoAgainstNone: r.alsoNone, Design: cfg.Design(), WebMCP: cfg.Browser.WebMCP}
	if opts.Judge, err = cfg.Judge.planJudge(m); err != nil {
		return nil, err
	}
	if r.plan, r.fresh, err = r.planOrResume(ctx, reg, opts); err != nil {
		return nil, err
	}
	if err := checkJudge(r.plan); err != nil {
		return nil, err
	}
	tis, err := runner.ArmTrialIntents(reg, revs, r.plan)
	if err != nil {
		return nil, err
	}
	if err := r.startParts(ctx, tools, tis); err != nil {
		return nil, err
	}
	return r, nil
}

// lock takes the run directory's lock, creating it if needed. A run
// directory this Open created is removed again at Close unless the smoke
// gate passed in it: a bench that stops before leaves nothing behind.
func (r *Run) lock() error {
	_, statErr := os.Stat(r.dir.Path)
	_, runsErr := os.Stat(r.cfg.RunsDir)
	lock, err := r.dir.Lock()
	if err != nil {
		return err
	}
	r.onClose(lock.Unlock)
	if errors.Is(statErr, fs.ErrNotExist) {
		// Runs before the unlock: the directory goes while it is held.
		r.onClose(func() error {
			if r.smoked {
				return nil
			}
			err := os.RemoveAll(r.dir.Path)
			if errors.Is(runsErr, fs.ErrNotExist) {
				_ = os.Remove(r.cfg.RunsDir) // only when empty
			}
			return err
		})
	}
	return nil
}

// readRegistry loads the registry from its directory, or from git at the
// pinned ref without a checkout.
func (r *Run) readRegistry(ctx context.Context) (*intents.Registry, rundir.Source, error) {
	g := r.cfg.Git
	if g == nil {
		reg, err := intents.Load(r.cfg.Registry)
		reg, err = checkRegistry(reg, err, r.cfg.Registry, false, time.Now())
		return reg, rundir.Source{}, err
	}
	source, tree, err := runner.GitFetch(ctx, g.Cache, g.Repo, g.Ref, g.PR, r.cfg.Registry)
	if err != nil {
		return nil, source, err
	}
	r.log.Info("registry", "source", source.String())
	reg, err := LoadGitRegistry(tree, r.cfg.Registry, source.Commit, time.Now())
	return reg, source, err
}

// LoadGitRegistry loads the registry at the root of tree, directory dir of
// the repository at commit, and checks it as a bench of that commit does: the problems intents finds
// or, when there are none, the baseline answers their own rules fail, in a
// *RegistryError that names the commit and each file by its path in the
// repository. pairbench serve checks a pull request's registry with it
// before it dispatches the bench to GitHub Actions.
func LoadGitRegistry(tree fs.FS, dir, commit string, now time.Time) (*intents.Registry, error) {
	reg, err := intents.LoadFS(tree, dir)
	// Named by its commit alone: the repository's URL may hold a token,
	// and whoever reads the error knows the repository.
	return checkRegistry(reg, err, "commit "+commit, true, now)
}

// checkRegistry turns what intents.Load found into a bench's error: its
// problems, an intent whose known-correct answer fails its own rules
// (which would have every trial graded by broken rules: validate's problem,
// so the run's), or a baseline step no agent can take, in a
// *RegistryError.
func checkRegistry(reg *intents.Registry, err error, name string, git bool, now time.Time) (*intents.Registry, error) {
	var ps intents.Problems
	if err != nil && !errors.As(err, &ps) {
		return nil, err
	}
	if err == nil {
		ps = append(grade.CheckBaselines(reg, now), runner.CheckBaselineSteps(reg)...)
		slices.SortStableFunc(ps, func(a, b intents.Problem) int {
			return cmp.Or(strings.Compare(a.File, b.File), a.Line-b.Line)
		})
	}
	if len(ps) > 0 {
		return nil, &RegistryError{Registry: name, Git: git, Problems: ps}
	}
	return reg, nil
}

// planOrResume returns the run's plan: the stored run.json when the run
// exists (refusing a changed plan unless Force), else a new one (fresh).
func (r *Run) planOrResume(ctx context.Context, reg *intents.Registry, opts runner.PlanOptions) (*rundir.Plan, bool, error) {
	stored, err := r.dir.ReadPlan()
	switch {
	case errors.Is(err, fs.ErrNotExist) && r.cfg.Resume:
		where := r.dir.Path
		if r.store != nil {
			where += " nor in the store " + r.cfg.Store
		}
		return nil, false, fmt.Errorf("%w: run %s is not in %s; without --resume it would be planned afresh", ErrNothingToResume, r.cfg.RunID, where)
	case errors.Is(err, fs.ErrNotExist) && r.cfg.Shards > 0:
		where := "this directory"
		if r.store != nil {
			where = "the store"
		}
		return nil, false, fmt.Errorf("shard %d/%d of run %s: %s holds no plan; plan the run once with `pairbench run --plan-only --store ...` and start every shard with the same --store and --run-id, so every shard runs the same plan",
			r.cfg.Shard, r.cfg.Shards, r.cfg.RunID, where)
	case errors.Is(err, fs.ErrNotExist):
		if opts.Seed == 0 {
			opts.Seed = uint64(time.Now().UnixNano())
		}
		if r.cfg.PairsAuto {
			opts.Pairs = 1 // planned once to count the intents; planPairs replans
		}
		plan, skipped, err := runner.NewPlan(reg, opts)
		for _, s := range skipped {
			r.problem(rundir.Problem{Msg: "intent skipped", Attrs: []any{"intent", s.Intent, "reason", s.Reason}})
		}
		if err == nil {
			plan, err = r.planPairs(reg, opts, plan)
		}
		return plan, true, err
	case err != nil:
		return nil, false, err
	}
	if was := stored.AgentName(); was != r.agentName {
		// Not even with Force: the rows of two agents are not one bench.
		return nil, false, fmt.Errorf("run %s is benched with %s, not %s; resume it with --agent %s, or bench %s under another --run-id",
			stored.RunID, was, r.agentName, was, r.agentName)
	}
	if mode := stored.WebMCPMode(); opts.WebMCP != "" && opts.WebMCP != mode {
		// Not even with Force: every trial of a run, in both arms, goes
		// through one WebMCP.
		return nil, false, fmt.Errorf("run %s is benched with --webmcp %s, not %s; resume it with --webmcp %s (or without --webmcp), or bench %s under another --run-id",
			stored.RunID, mode, opts.WebMCP, mode, opts.WebMCP)
	}
	opts.WebMCP = stored.WebMCPMode() // not given: the run's own
	opts.Now = stored.CreatedAt
	topUp := 0
	if have := stored.PairsPerIntent(); r.cfg.PairsGiven && opts.Pairs != have {
		if opts.Pairs < have {
			_, err := stored.TopUp(opts.Pairs) // says why
			return nil, false, err
		}
		topUp = opts.Pairs
	}
	if have := stored.PairsPerIntent(); !r.cfg.PairsGiven || topUp > 0 { // compared as planned
		opts.Pairs = have
	}
	if opts.Seed == 0 { // not given: the run's own
		opts.Seed = stored.Seed
	}
	if len(opts.Intents) == 0 {
		for _, in := range stored.Intents {
			opts.Intents = append(opts.Intents, in.ID)
		}
	}
	again, _, err := runner.NewPlan(reg, opts)
	if err != nil {
		return nil, false, fmt.Errorf("resume %s: %w", stored.RunID, err)
	}
	if changes := stored.Changes(again); len(changes) > 0 {
		if !r.cfg.Force {
			return nil, false, fmt.Errorf("run %s was planned differently (%s); use another --run-id, or --force to resume it as planned",
				stored.RunID, strings.Join(changes, "; "))
		}
		// Resumed as planned, and the report names what was forced past.
		if err := r.dir.RecordForced(rundir.ForcedResume{At: time.Now().UTC(), Changes: changes}); err != nil {
			return nil, false, err
		}
		r.problem(rundir.Problem{Msg: "resuming a run whose plan changed", Attrs: []any{"changes", changes}})
	}
	if topUp > 0 {
		if r.cfg.Shards > 0 {
			return nil, false, fmt.Errorf("shard %d/%d of run %s: top the run up to %d pairs once with `pairbench run --plan-only --pairs %d`, then start every shard",
				r.cfg.Shard, r.cfg.Shards, stored.RunID, topUp, topUp)
		}
		// A run that claimed a difference is not topped up; one that
		// stopped claiming nothing goes on from its next look.
		if r.cfg.PlanOnly && r.store != nil {
			// The rows are in the store, the run's or its shards'.
			stored.Stop, err = storedStop(ctx, r.store, stored)
		} else {
			stored.Stop, err = stopOf(r.dir, stored)
		}
		if err != nil {
			return nil, false, err
		}
		if stored, err = stored.TopUp(topUp); err != nil {
			var claimed *rundir.ClaimedError
			if errors.As(err, &claimed) {
				err = claimedError{claimed}
			}
			return nil, false, err
		}
		if err := r.dir.WritePlan(stored); err != nil {
			return nil, false, err
		}
		r.log.Info("topped up", "run", stored.RunID, "pairs", topUp, "looks", stored.Looks)
	}
	r.log.Info("resuming", "run", stored.RunID)
	return stored, false, nil
}
