package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/artifacts"
	"github.com/pairbench/pairbench/examples/site"
	"github.com/pairbench/pairbench/intents"
	"github.com/pairbench/pairbench/runner"
	"github.com/pairbench/pairbench/runner/agent/pi"
	"github.com/pairbench/pairbench/runner/browser/local"
	"github.com/pairbench/pairbench/runner/model"
	"github.com/pairbench/pairbench/sandbox"
)

// scriptedModel names pairbench's own scripted model on the command line.
const scriptedModel = "scripted"

// benchOptions is everything a bench run is told.
type benchOptions struct {
	// Registry is a registry directory, or, with GitRepo set, the
	// registry's path inside the repository ("" or "." for its root).
	Registry string
	// GitRepo, GitRef and PR read the registry from a git repository at a
	// pinned ref through a bare cache in GitCache (see runner.GitFetch).
	GitRepo, GitRef, GitCache string
	PR                        int

	Intents  []string
	Pairs    int
	Slots    int
	Adoption int
	// Model is "scripted" or provider/id; ModelURL overrides the
	// provider's endpoint.
	Model, ModelURL string
	Caps            runner.PlanCaps
	StartDelay      time.Duration
	Settle          time.Duration
	RunID           string
	RunsDir         string
	// Store is where the run is uploaded as it is produced ("" keeps it
	// local only); see artifacts.Open.
	Store         string
	Seed          uint64
	Alpha         float64
	Shard, Shards int
	Force         bool
	// Tools is the node_modules directory of the pinned Node tools.
	Tools string
	// Hosts maps site host names to loopback addresses for Chromium.
	Hosts map[string]string
	// ExampleSites serves the example sites on loopback and maps their
	// hosts.
	ExampleSites bool
	// Link is the full report's URL, linked from report.md.
	Link string
	// Budget is what the whole run may use; the smoke gate refuses a plan
	// whose trials could exceed it at their caps.
	Budget runner.Budget
	// PlanOnly stops after the plan is frozen (and stored): the plan job
	// of a run spread over runners.
	PlanOnly bool
	// TempDir holds the per-trial sandbox, egress and browser profile
	// directories; those killed runners left there are removed.
	TempDir string
	// Live, when set, is the terminal's live progress display; log
	// records already go through it.
	Live *liveView
}

// benchResult says where a finished bench left its run.
type benchResult struct {
	Dir  string
	Plan *runner.Plan
}

// runBench plans (or resumes) a run, passes the smoke gate, runs every
// pending trial, uploads the run, and writes its report. Progress goes to
// log; the report's paths to stdout.
func runBench(ctx context.Context, o benchOptions, log *slog.Logger, stdout, stderr io.Writer) (*benchResult, error) {
	// A runner killed with SIGKILL could not remove its directories (its
	// browsers and sandboxes died with it); its successors do, at start and
	// again at exit for the ones too young to be sure of at start.
	cleanLeftovers(o.TempDir, time.Now(), log)
	defer func() { cleanLeftovers(o.TempDir, time.Now(), log) }()

	var source runner.Source
	var reg *intents.Registry
	var err error
	if o.GitRepo != "" {
		var tree fs.FS
		if source, tree, err = runner.GitFetch(ctx, o.GitCache, o.GitRepo, o.GitRef, o.PR, o.Registry); err != nil {
			return nil, err
		}
		log.Info("registry", "source", source.String())
		reg, err = intents.LoadFS(tree, o.Registry)
	} else {
		reg, err = intents.Load(o.Registry)
	}
	if err != nil {
		var ps intents.Problems
		if errors.As(err, &ps) {
			for _, p := range ps {
				fmt.Fprintln(stderr, p)
			}
			return nil, fmt.Errorf("the registry %s has %d problem(s); `pairbench validate %s` lists them", o.Registry, len(ps), o.Registry)
		}
		return nil, err
	}

	hosts := o.Hosts
	if o.ExampleSites {
		addr, stop, err := serveLoopback(site.New())
		if err != nil {
			return nil, fmt.Errorf("example sites: %w", err)
		}
		defer stop()
		hosts = map[string]string{}
		for _, h := range site.Hosts() {
			hosts[h] = addr
		}
	}

	m, err := parseModel(o.Model, o.ModelURL)
	if err != nil {
		return nil, usageError{err}
	}
	tools := pi.Tools{NodeModules: o.Tools}
	versions, err := componentVersions(ctx, tools)
	if err != nil {
		return nil, err
	}

	dir := filepath.Join(o.RunsDir, o.RunID)
	run := runner.RunDir{Path: dir}
	lock, err := run.Lock()
	if err != nil {
		return nil, err
	}
	defer lock.Unlock()

	var store artifacts.Store
	adopted := false
	if o.Store != "" {
		if store, err = artifacts.Open(ctx, o.Store); err != nil {
			return nil, err
		}
		// A shard takes the plan already stored (by a --plan-only run), so
		// every runner of the run shares one run.json.
		if adopted, err = run.FetchPlan(ctx, store, o.RunID); err != nil {
			return nil, err
		}
	}

	opts := runner.PlanOptions{RunID: o.RunID, Intents: o.Intents, Pairs: o.Pairs, Model: m, Caps: o.Caps,
		Seed: o.Seed, Alpha: o.Alpha, Versions: versions, Now: time.Now(), Source: source}
	plan, fresh, err := planOrResume(reg, run, opts, o.Force, log)
	if err != nil {
		return nil, err
	}
	tis, err := runner.TrialIntents(reg, plan)
	if err != nil {
		return nil, err
	}
	if plan.Model.Scripted {
		var known []intents.Intent
		for _, ti := range tis {
			known = append(known, ti.Intent)
		}
		addr, stop, err := serveLoopback(model.New(known, model.Options{Logger: log}))
		if err != nil {
			return nil, fmt.Errorf("scripted model: %w", err)
		}
		defer stop()
		plan.Model.BaseURL = "http://" + addr + "/v1"
	}

	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	agent, err := pi.New(pi.Config{Node: tools.Node(), Package: tools.Pi(), ExtraPackages: tools.PlaywrightPackages(),
		HostEnv: os.Environ(), Executable: exe, TempRoot: o.TempDir, Log: log})
	if err != nil {
		return nil, err
	}
	// One spare browser per slot: each trial's Chromium starts while the
	// slot's previous trial runs.
	browsers, err := local.New(local.Config{Hosts: hosts, TempDir: o.TempDir, Log: log, Spares: o.Slots})
	if err != nil {
		return nil, err
	}
	defer browsers.Close()
	trials := &runner.Trials{RunDir: run, Plan: plan, Intents: tis, Browsers: browsers, Agent: agent,
		BrowserMCP: tools.BrowserMCP(o.Settle), StartDelay: o.StartDelay, Log: log}

	if fresh || adopted {
		if err := smokeGate(ctx, trials, o, log); err != nil {
			return nil, fmt.Errorf("smoke gate: %w", err)
		}
	}
	if fresh {
		if err := run.WritePlan(plan); err != nil {
			return nil, err
		}
	}

	var sync *artifacts.Syncer
	if store != nil {
		if sync, err = run.Syncer(store, o.RunID); err != nil {
			return nil, err
		}
	}
	if o.PlanOnly {
		if sync != nil {
			if _, err := sync.Sync(ctx); err != nil {
				return nil, fmt.Errorf("store the plan: %w", err)
			}
		}
		fmt.Fprintln(stdout, run.File(runner.PlanFile))
		return &benchResult{Dir: dir, Plan: plan}, nil
	}

	// The warm-up fills the Node compile cache every trial's agent reads;
	// without it trials still run, each compiling pi and Playwright MCP
	// afresh.
	if err := agent.Warm(ctx, tools.BrowserMCP(o.Settle)("ws://127.0.0.1:9/warm-up")); err != nil {
		log.Warn("agent warm-up failed; trials run without a compile cache", "err", err)
	}
	defer agent.Close()
	upload := func() {
		if sync == nil {
			return
		}
		if _, err := sync.Sync(context.WithoutCancel(ctx)); err != nil {
			log.Warn("upload to the artifact store failed; it is retried after the next row", "err", err)
		}
	}

	ex := &runner.Execution{Dir: run, Plan: plan, Slots: o.Slots, Shard: o.Shard, Shards: o.Shards,
		Adoption: o.Adoption, Trial: trials.Run, Log: log,
		OnRow: func(r pairbench.Row) {
			log.Info("trial", "intent", r.Intent, "pair", r.Pair, "arm", r.Arm, "attempt", r.Attempt,
				"outcome", r.Outcome, "reason", r.Reason, "seconds", fmt.Sprintf("%.1f", r.WallSeconds), "turns", r.Turns)
			upload()
		}}
	stopProgress, err := followRun(ctx, ex, o.Live, log)
	if err != nil {
		return nil, err
	}
	runErr := ex.Run(ctx)
	stopProgress()
	if runErr != nil && ctx.Err() != nil {
		upload()
		return nil, runErr
	}
	if o.Shards > 0 {
		// A shard holds part of the run: `pairbench merge` reports it whole.
		upload()
		log.Info("shard done; merge the shards with `pairbench merge`", "shard", fmt.Sprintf("%d/%d", o.Shard, o.Shards))
		return &benchResult{Dir: dir, Plan: plan}, runErr
	}
	if err := runReport(dir, "", o.Link, stdout, stderr); err != nil {
		return nil, err
	}
	upload()
	return &benchResult{Dir: dir, Plan: plan}, runErr
}

// leftoverGrace is how old an unheld directory must be before it counts as
// a killed runner's: a live runner locks each directory right after
// creating it.
const leftoverGrace = 5 * time.Second

// cleanLeftovers removes the sandbox, egress, browser profile and compile
// cache directories under dir that no live runner holds.
func cleanLeftovers(dir string, now time.Time, log *slog.Logger) {
	cutoff := now.Add(-leftoverGrace)
	sandboxes, err1 := sandbox.CleanStale(dir, cutoff)
	profiles, err2 := local.CleanStale(dir, cutoff)
	caches, err3 := pi.CleanStale(dir, cutoff)
	if n := len(sandboxes) + len(profiles) + len(caches); n > 0 {
		log.Info("removed directories left by killed runners", "sandbox", len(sandboxes), "browser", len(profiles),
			"compile-cache", len(caches), "dir", dir)
	}
	if err := errors.Join(err1, err2, err3); err != nil {
		log.Warn("could not remove every directory left by killed runners", "err", err)
	}
}

// planOrResume returns the run's plan: the stored run.json when the run
// exists (refusing a changed plan unless force), else a new one (fresh).
func planOrResume(reg *intents.Registry, run runner.RunDir, opts runner.PlanOptions, force bool, log *slog.Logger) (*runner.Plan, bool, error) {
	stored, err := run.ReadPlan()
	switch {
	case errors.Is(err, fs.ErrNotExist):
		plan, skipped, err := runner.NewPlan(reg, opts)
		for _, s := range skipped {
			log.Warn("intent skipped", "intent", s.Intent, "reason", s.Reason)
		}
		return plan, true, err
	case err != nil:
		return nil, false, err
	}
	opts.Now = stored.CreatedAt
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
		if !force {
			return nil, false, fmt.Errorf("run %s was planned differently (%s); use another --run-id, or --force to resume it as planned",
				stored.RunID, strings.Join(changes, "; "))
		}
		log.Warn("resuming a run whose plan changed", "changes", changes)
	}
	log.Info("resuming", "run", stored.RunID)
	return stored, false, nil
}

// smokeGate checks, before any pair, that a trial can work at all: the
// sandbox is sound and one treatment browser setup passes end to end.
func smokeGate(ctx context.Context, t *runner.Trials, o benchOptions, log *slog.Logger) error {
	hidden := []string{o.RunsDir}
	if o.GitRepo == "" {
		hidden = append(hidden, o.Registry) // else it is read from the cache, into memory
	}
	if o.GitCache != "" {
		hidden = append(hidden, o.GitCache)
	}
	if err := sandbox.Check(ctx, sandbox.CheckOptions{Hidden: hidden, TempRoot: o.TempDir}); err != nil {
		return err
	}
	if err := runner.CheckBudget(o.Budget, plannedTrials(t.Plan, o), o.Slots, t.Plan.Caps.Caps()); err != nil {
		return err
	}
	if err := runner.SmokeAgent(ctx, t.Agent, t.Plan.Model, o.TempDir); err != nil {
		return err
	}
	first := t.Plan.Intents[0]
	ti := t.Intents[first.ID]
	setup, err := runner.SetUpBrowser(ctx, log, t.Browsers, runner.SetupSpec{Arm: pairbench.Treatment,
		StartURL: ti.Intent.StartURL, Tools: ti.Tools, EntryTool: ti.Intent.EntryTool, Browser: ti.Browser})
	if err != nil {
		return fmt.Errorf("treatment setup of %s: %w", first.ID, err)
	}
	return setup.Browser.Close(ctx)
}

// plannedTrials counts the trials this runner's share of the plan holds:
// two per pair of its shard, and the adoption trials.
func plannedTrials(p *runner.Plan, o benchOptions) int {
	ex := runner.Execution{Plan: p, Shard: o.Shard, Shards: o.Shards}
	pairs, err := ex.Pairs()
	if err != nil {
		return 0
	}
	domains := map[string]bool{}
	for _, in := range p.Intents {
		domains[in.Domain] = true
	}
	return 2*len(pairs) + o.Adoption*len(domains)
}

// parseModel reads --model: "scripted" for the scripted model, else
// provider/id priced by the agent.
func parseModel(name, baseURL string) (runner.Model, error) {
	if name == scriptedModel {
		return runner.Model{Provider: "pairbench", ID: "pairbench-scripted", Scripted: true,
			KeyEnv: "PAIRBENCH_MODEL_KEY", InputPrice: 3, OutputPrice: 15}, nil
	}
	provider, id, ok := strings.Cut(name, "/")
	if !ok || provider == "" || id == "" {
		return runner.Model{}, fmt.Errorf("--model %q: want %s or provider/id (e.g. openai/gpt-5.4-mini)", name, scriptedModel)
	}
	return runner.Model{Provider: provider, ID: id, BaseURL: baseURL}, nil
}

// componentVersions records what every trial depends on, for run.json.
func componentVersions(ctx context.Context, t pi.Tools) (runner.Versions, error) {
	v := runner.Versions{Pairbench: version()}
	var err error
	if v.Agent, err = packageVersion(t.Pi()); err != nil {
		return v, fmt.Errorf("pi is not installed (run `make setup`): %w", err)
	}
	if v.PlaywrightMCP, err = packageVersion(t.PlaywrightMCP()); err != nil {
		return v, fmt.Errorf("Playwright MCP is not installed (run `make setup`): %w", err)
	}
	out, err := exec.CommandContext(ctx, t.Node(), "--version").Output()
	if err != nil {
		return v, fmt.Errorf("node 22 is not installed (run `make setup`): %w", err)
	}
	v.Node = strings.TrimSpace(string(out))
	out, err = exec.CommandContext(ctx, local.DefaultChromiumPath, "--version").Output()
	if err != nil {
		return v, fmt.Errorf("chromium is not installed (run `make setup`): %w", err)
	}
	v.Chromium = strings.TrimSpace(string(out))
	return v, nil
}

func packageVersion(dir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, "package.json"))
	if err != nil {
		return "", err
	}
	var meta struct {
		Version string `json:"version"`
	}
	if err := json.Unmarshal(b, &meta); err != nil {
		return "", fmt.Errorf("%s/package.json: %w", dir, err)
	}
	return meta.Version, nil
}

// serveLoopback serves h on a free loopback port until stop is called.
func serveLoopback(h http.Handler) (addr string, stop func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ln)
	}()
	return ln.Addr().String(), func() {
		srv.Close()
		<-done
	}, nil
}

// parseShard reads --shard k/n.
func parseShard(s string) (k, n int, err error) {
	if s == "" {
		return 0, 0, nil
	}
	a, b, ok := strings.Cut(s, "/")
	if ok {
		k, err = strconv.Atoi(a)
		if err == nil {
			n, err = strconv.Atoi(b)
		}
	}
	if !ok || err != nil || n < 1 || k < 1 || k > n {
		return 0, 0, fmt.Errorf("--shard %q: want k/n with 1 <= k <= n, e.g. 2/3", s)
	}
	return k, n, nil
}
