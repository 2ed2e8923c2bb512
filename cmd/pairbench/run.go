package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/pairbench/pairbench/agent"
	"github.com/pairbench/pairbench/bench"
	"github.com/pairbench/pairbench/bench/progress"
	"github.com/pairbench/pairbench/bot"
	"github.com/pairbench/pairbench/rundir"
	"github.com/pairbench/pairbench/runner"
)

// benchOptions are the options of a bench (run, demo, and serve's local
// backend): a bench.Config and what the command line says about it, which
// finish turns into it.
type benchOptions struct {
	bench.Config
	// git becomes Config.Git when its Repo is set: the registry is then
	// read from git at its Ref.
	git bench.Git
	// shard, hosts and cdpConfig are --shard, --host and --cdp-config;
	// caCert and origins, --ca-cert and --origin.
	shard, cdpConfig, caCert string
	hosts, origins           []string
	// logFormat is --log-format. live, once logger set it, is the
	// terminal's live progress display; log records already go through it.
	logFormat string
	live      *progress.Terminal
	// allowInconclusive is --allow-inconclusive: run sets
	// Config.RefuseUnreachable unless it is given.
	allowInconclusive bool
	// gate is run's --fail-on, checked on the run's report.
	gate gateFlag
}

// defaultBenchOptions are run's defaults (bench.DefaultConfig); demo's
// are bench.DemoConfig.
func defaultBenchOptions() benchOptions {
	return benchOptions{Config: bench.DefaultConfig()}
}

// benchFlags binds the flags `run` and `demo` share to o, with o's values as
// their defaults.
func benchFlags(cmd *cobra.Command, o *benchOptions) {
	f := cmd.Flags()
	f.StringSliceVar(&o.Intents, "intent", o.Intents, "intent id or domain to bench (repeatable; default: every intent whose fixtures are not stale; a domain skips its stale intents, a stale id fails)")
	f.Var(pairsValue{&o.Config}, "pairs", "pairs per intent, or auto: the fewest that make the run's verdict attainable and detect --effect with 80% power (docs/statistics.md, Planning)")
	f.Var(effectValue{&o.Effect}, "effect", "with --pairs auto, the effect to detect: a speedup such as 1.5x or an accuracy gain such as +20pp")
	f.IntVar(&o.Looks, "looks", o.Looks, "looks a new run takes at equal fractions of its pairs: it stops at the first that decides it, for efficacy (a verdict at the look's share of --alpha) or futility (docs/statistics.md, Looks); 1: one look, after every pair")
	f.BoolVar(&o.allowInconclusive, "allow-inconclusive", false, "run a plan whose pairs can reach no label (refused otherwise, with exit 2 and the pairs it needs)")
	f.IntVar(&o.Adoption, "adoption", 0, "treatment-only adoption trials per domain before its pairs (0: skip the stage)")
	f.StringVar(&o.Agent, "agent", o.Agent, "agent benched in both arms: "+strings.Join(agent.Names, ", ")+" (each its real CLI at the version tools/package.json pins; see docs/cli.md, Agents)")
	f.StringVar(&o.Model, "model", o.Model, "model: "+bench.ScriptedModel+" (pairbench's deterministic scripted model, not an LLM) or provider/id, e.g. openai/gpt-5.4-mini with OPENAI_API_KEY set")
	f.StringVar(&o.ModelURL, "model-url", "", "override the provider's API base URL (an OpenAI-compatible endpoint)")
	f.StringVar(&o.Judge.Model, "judge-model", "", "judge of judged intents: "+bench.ScriptedModel+" or provider/id (default: --model), reached as the agents' model is")
	f.StringVar(&o.Judge.ModelURL, "judge-model-url", "", "override the judge provider's API base URL (an OpenAI-compatible endpoint)")
	f.Float64Var(&o.Judge.Caps.SpendUSD, "judge-spend-cap", bench.DefaultJudgeCaps.SpendUSD, "USD one judging of a judged trial may cost (over it, the trial aborts and its pair reruns)")
	f.Float64Var(&o.Judge.Caps.TimeS, "judge-time-cap", bench.DefaultJudgeCaps.TimeS, "seconds one judging may take")
	f.BoolVar(&o.Judge.Twice, "judge-twice", false, "judge every judged answer twice and report the judge's agreement with itself (doubles the judging's cost)")
	f.Float64Var(&o.Caps.TimeS, "time-cap", o.Caps.TimeS, "seconds one agent may run before it is stopped (outcome timeout)")
	f.IntVar(&o.Caps.Turns, "turn-cap", o.Caps.Turns, "model turns one agent may take")
	f.Float64Var(&o.Caps.SpendUSD, "spend-cap", o.Caps.SpendUSD, "USD one agent may spend")
	f.DurationVar(&o.Settle, "settle", o.Settle, "Playwright MCP's settle wait after each action, in both arms")
	f.StringVar(&o.RunID, "run-id", "", "run id; rerun with the same id to resume (default: a new id, the UTC time and a random suffix)")
	f.StringVar(&o.Store, "store", "", "artifact store the run is uploaded to as it runs: a directory or s3://bucket/prefix (see docs/artifacts.md)")
	f.Uint64Var(&o.Seed, "seed", 0, "seed for pair orders and the report's bootstrap (default: a new run draws one from the clock, a resume keeps its own; recorded in run.json)")
	f.Float64Var(&o.Alpha, "alpha", o.Alpha, "two-sided significance level of the labels")
	f.BoolVar(&o.Force, "force", false, "resume a run even though its plan changed")
	f.DurationVar(&o.Budget.Time, "budget-time", 0, "wall time the run may take; the smoke gate refuses a plan that could exceed it at its caps (0: no limit)")
	f.Float64Var(&o.Budget.SpendUSD, "budget-usd", 0, "USD the run may spend; the smoke gate refuses a plan that could exceed it at its caps (0: no limit)")
	hostFlags(cmd, o, "")
}

// hostFlags binds the flags of how a bench runs on this host, which run,
// demo and serve share (serve's, for its local backend, say so in prefix),
// and the log format, to o, with its values as defaults.
func hostFlags(cmd *cobra.Command, o *benchOptions, prefix string) {
	f := cmd.Flags()
	f.IntVar(&o.Slots, "slots", o.Slots, prefix+"jobs run at once (each holds a browser, an agent and a spare browser started ahead)")
	f.StringVar(&o.RunsDir, "runs-dir", o.RunsDir, prefix+"directory holding run directories")
	f.StringVar(&o.Tools, "tools", "", prefix+"node_modules directory of the pinned Node tools (default: $"+bench.ToolsEnv+", else tools/node_modules in the current directory, next to the binary, or in the binary's checkout)")
	f.StringVar(&o.Chromium, "chromium", os.Getenv(bench.ChromiumEnv), prefix+"Chromium binary of the local trial browsers (default $"+bench.ChromiumEnv+", else "+bench.DefaultChromium+")")
	f.DurationVar(&o.StartDelay, "start-delay", o.StartDelay, prefix+"how long after the start page loaded the agent starts, in both arms")
	f.StringVar(&o.TempDir, "temp-dir", "", prefix+"directory for per-trial sandbox, egress and browser profile directories; ones left by killed runners are removed (default: $TMPDIR or /tmp)")
	f.StringVar(&o.Browser.Provider, "browser", bench.BrowserLocal, prefix+"where the trials' browsers run: local (Chromium here, in its own sandbox), kernel (Kernel's cloud browsers; KERNEL_API_KEY) or cdp (a service that hands out CDP websocket URLs, see --cdp-config); docs/browsers.md")
	f.BoolVar(&o.Browser.Stealth, "stealth", false, prefix+"ask every browser, in both arms, for the cloud provider's anti-bot measures (kernel, or {stealth} in a cdp configuration)")
	f.StringVar(&o.Browser.Kernel.BaseURL, "kernel-url", "", prefix+"Kernel's API base URL (default "+bench.KernelAPI+")")
	f.StringVar(&o.cdpConfig, "cdp-config", "", prefix+"JSON file configuring --browser cdp: a create/release pair of HTTP calls or a websocket URL template (docs/browsers.md)")
	f.StringVar((*string)(&o.Browser.WebMCP), "webmcp", "", prefix+"whose WebMCP both arms use: polyfill (the pinned polyfill injected into each page) or native (the browser's own, Chromium with "+bench.NativeWebMCPSwitch+", listed and invoked through DevTools; control must then have no tool of its own) (default: polyfill, a resumed run keeps its own; docs/browsers.md)")
	f.StringVar(&o.logFormat, "log-format", "text", "log format: text or json")
}

// siteFlags binds the flags of how the browser reaches the site, which run
// and validate --site share (docs/registry.md, "Bench your own or a
// staging site").
func siteFlags(cmd *cobra.Command, o *benchOptions) {
	f := cmd.Flags()
	f.StringSliceVar(&o.hosts, "host", nil, "send the browser's requests for a host to another address, name=ADDRESS:PORT (an IP or a name: books.example=localhost:8080); repeatable")
	f.StringVar(&o.caCert, "ca-cert", "", "PEM file of CAs the browser trusts for the run beyond the system's (a staging site's private CA)")
	f.StringArrayVar(&o.origins, "origin", nil, "point the registry at another origin for the run, FROM=TO: example.com=https://staging.example.com rewrites start_url and urlPatterns; repeatable")
}

// finish reads the flags bench.Config does not take as they are, then fills
// the defaults that depend on the clock or the host and checks the whole
// (bench.Config.Complete).
func (o *benchOptions) finish() error {
	var err error
	if o.Shard, o.Shards, err = bench.ParseShard(o.shard); err != nil {
		return err
	}
	if o.Hosts, err = bench.ParseHosts(context.Background(), o.hosts); err != nil {
		return err
	}
	if o.Origins, err = bench.ParseOrigins(o.origins); err != nil {
		return err
	}
	if o.caCert != "" {
		if o.CACerts, err = bench.ReadCACerts(o.caCert); err != nil {
			return err
		}
	}
	if err := o.Browser.FromHost(os.Getenv, o.cdpConfig); err != nil {
		return err
	}
	o.Git = nil
	if o.git.Repo != "" {
		git := o.git
		o.Git = &git
	}
	return o.Complete()
}

// logger returns the bench's logger, records in o's log format on stderr,
// and sets o.live to the live display when stderr is a terminal (the
// records then scroll above it).
func (o *benchOptions) logger(stderr io.Writer) (*slog.Logger, error) {
	var out io.Writer
	out, o.live = progress.Output(stderr, o.logFormat)
	return bot.NewLogger(out, o.logFormat)
}

// runBench runs a bench as `pairbench run` does: records to log, the live
// display on o.live, and the paths it wrote (run.json for a plan-only
// bench, else the reports; a second comparison's too) to stdout. A
// registry's problems are in the error.
func runBench(ctx context.Context, o benchOptions, log *slog.Logger, stdout io.Writer) (bench.Result, error) {
	display := progress.New(o.live, log, time.Now, o.Slots)
	hooks := display.Hooks()
	hooks.Step = o.Hooks.Step // a caller's own watch on the bench's steps
	o.Log, o.Hooks = log, hooks
	stop := display.Animate(ctx)
	res, err := bench.Bench(ctx, o.Config)
	stop()
	var unreachable *bench.UnreachablePlanError
	if errors.As(err, &unreachable) || errors.Is(err, runner.ErrUnknownIntent) || errors.Is(err, bench.ErrClaimed) || errors.Is(err, bench.ErrNothingToResume) {
		err = usageError{err}
	}
	for r := &res; r != nil; r = r.AgainstNone { // compare: both's second run too
		if o.PlanOnly && err == nil {
			fmt.Fprintln(stdout, r.Dir.File(rundir.PlanFile))
		}
		for _, p := range r.Reports {
			fmt.Fprintln(stdout, p)
		}
	}
	return res, err
}

func newRunCmd() *cobra.Command {
	o := defaultBenchOptions()
	var arms armOptions
	cmd := &cobra.Command{
		Use:   "run REGISTRY",
		Short: "Bench a registry's intents with paired A/B trials",
		Long:  longHelp("run"),
		Args:  argCount(1, 1, "one REGISTRY directory"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Registry = args[0]
			if err := arms.apply(cmd, &o.Config); err != nil {
				return usageError{err}
			}
			o.RefuseUnreachable = !o.allowInconclusive
			if err := o.finish(); err != nil {
				return usageError{err}
			}
			log, err := o.logger(cmd.ErrOrStderr())
			if err != nil {
				return usageError{err}
			}
			logRunStart(log, o)
			res, err := runBench(cmd.Context(), o, log, cmd.OutOrStdout())
			logResume(cmd.Context(), log, cmd, args, o.RunID)
			if err != nil || o.PlanOnly || o.Shards > 0 {
				return nothingToBench(err, cmd.OutOrStdout())
			}
			var gates []error
			for r := &res; r != nil; r = r.AgainstNone { // compare: both's second run too
				if err := printVerdict(cmd.OutOrStdout(), r.Dir); err != nil {
					return err
				}
				gates = append(gates, o.gate.check(r.Dir))
			}
			return errors.Join(gates...)
		},
	}
	benchFlags(cmd, &o)
	addGateFlag(cmd, &o.gate)
	armFlags(cmd, &arms)
	cmd.Flags().StringVar(&o.shard, "shard", "", "run only shard k of n (k/n) of the planned pairs")
	siteFlags(cmd, &o)
	cmd.Flags().StringVar(&o.git.Repo, "git-repo", "", "read the registry from this git repository (URL or path) at --git-ref; REGISTRY is then its path inside the repository")
	cmd.Flags().StringVar(&o.git.Ref, "git-ref", "HEAD", "branch, tag or commit to read the registry at (with --git-repo)")
	cmd.Flags().IntVar(&o.git.PR, "pr", 0, "pull request number: if --git-ref is a deleted branch, read refs/pull/N/head instead (the report says so)")
	cmd.Flags().StringVar(&o.git.Cache, "git-cache", filepath.Join(os.TempDir(), "pairbench-git-cache"), "bare repository caching fetched registries; no working tree is ever touched")
	cmd.Flags().BoolVar(&o.ExampleSites, "example-sites", false, "serve pairbench's example sites (books.example, weather.example) on loopback")
	cmd.Flags().StringVar(&o.Link, "link", "", "URL of the full report, linked from report.md")
	cmd.Flags().BoolVar(&o.PlanOnly, "plan-only", false, "plan the run, pass the smoke gate, freeze run.json (and store it), then stop: the plan job of a sharded run")
	cmd.Flags().BoolVar(&o.Resume, "resume", false, "only resume (or, with a larger --pairs, top up) run --run-id, in --runs-dir or the --store: one in neither is refused (exit 2), never planned afresh")
	return cmd
}
