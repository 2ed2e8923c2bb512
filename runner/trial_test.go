package runner_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image/png"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pairbench/pairbench/rundir"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/agent/pi"
	"github.com/pairbench/pairbench/browser/local"
	"github.com/pairbench/pairbench/examples/site"
	"github.com/pairbench/pairbench/intents"
	"github.com/pairbench/pairbench/internal/offline"
	"github.com/pairbench/pairbench/internal/realstack"
	"github.com/pairbench/pairbench/internal/sandboxtest"
	"github.com/pairbench/pairbench/model"
	"github.com/pairbench/pairbench/runner"
	"github.com/pairbench/pairbench/sandbox"
)

// TestMain lets the test binary serve as the sandbox's init, as pairbench's
// own binary does. The tests run in a network namespace with loopback only
// (offline.Main): their browsers reach nothing beyond this machine.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == sandbox.InitArg {
		os.Exit(sandbox.RunInit(os.Args[2:]))
	}
	offline.Main(m)
}

var tools = func() pi.Tools {
	dir, err := filepath.Abs("../tools/node_modules")
	if err != nil {
		panic(err)
	}
	return pi.Tools{NodeModules: dir}
}()

// stack is everything a real trial needs, on this machine, offline.
type stack struct {
	trials   *runner.Trials
	browsers *local.Provider
	agent    *pi.Agent
	model    *httptest.Server
	// tmp holds every per-trial directory: browser profiles, sandboxes and
	// egress sockets.
	tmp string
}

// newStack builds the stack pairbench run builds (one spare browser, a warm
// compile cache); browser changes the browser provider's configuration.
func newStack(t testing.TB, intentIDs []string, opts model.Options, browser ...func(*local.Config)) *stack {
	t.Helper()
	realstack.Need(t)
	siteSrv := httptest.NewServer(site.New())
	t.Cleanup(siteSrv.Close)
	hosts := map[string]string{}
	for _, h := range site.Hosts() {
		hosts[h] = siteSrv.Listener.Addr().String()
	}
	tmp := sandboxtest.TempDir(t)
	// As pairbench run sets it, but no name the browser asks for reaches
	// real DNS: the example sites are mapped, everything else fails.
	cfg := local.Config{Hosts: hosts, TempDir: tmp, Spares: 1, Resolver: noDNS{}}
	for _, f := range browser {
		f(&cfg)
	}
	browsers, err := local.New(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { browsers.Close() })

	reg, err := intents.Load("../examples/registry")
	require.NoError(t, err)
	plan, _, err := runner.NewPlan(reg, runner.PlanOptions{
		RunID: "t", Intents: intentIDs, Pairs: 1, Seed: 1, Alpha: 0.05, Now: time.Now(),
		Model: rundir.Model{Provider: "pairbench", ID: "pairbench-scripted", Scripted: true,
			KeyEnv: "PAIRBENCH_MODEL_KEY", InputPrice: 3, OutputPrice: 15},
		// As roomy as the agent contracts' (agenttest): on a machine many
		// times busier than this one a trial may take minutes.
		Caps: rundir.PlanCaps{TimeS: 600, Turns: 25, SpendUSD: 1},
	})
	require.NoError(t, err)
	tis, err := runner.TrialIntents(reg, plan)
	require.NoError(t, err)
	modelSrv := httptest.NewServer(model.New(intentsOf(tis), opts))
	t.Cleanup(modelSrv.Close)
	plan.Model.BaseURL = modelSrv.URL + "/v1"

	exe, err := os.Executable()
	require.NoError(t, err)
	agent, err := pi.New(pi.Config{
		Node: tools.Node(), Package: tools.Path(pi.Package), ExtraPackages: tools.PlaywrightPackages(),
		HostEnv: []string{"OPENAI_API_KEY=sk-host-secret-must-not-leak", "HOME=/root"}, Executable: exe,
		TempRoot: tmp,
	})
	require.NoError(t, err)
	browserMCP := tools.BrowserMCP(250 * time.Millisecond)
	require.NoError(t, agent.Warm(context.Background(), browserMCP("ws://127.0.0.1:9/warm-up")), "as pairbench run does")
	t.Cleanup(func() { agent.Close() })
	return &stack{
		trials: &runner.Trials{
			RunDir: rundir.RunDir{Path: t.TempDir()}, Plan: plan, Intents: tis, Browsers: browsers, Agent: agent,
			BrowserMCP: browserMCP,
		},
		browsers: browsers,
		agent:    agent,
		model:    modelSrv,
		tmp:      tmp,
	}
}

// noDNS resolves nothing, so no test asks real DNS.
type noDNS struct{}

func (noDNS) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	return nil, &net.DNSError{Err: "no DNS in tests", Name: host, IsNotFound: true}
}

func intentsOf(tis map[string]*runner.TrialIntent) []intents.Intent {
	var out []intents.Intent
	for _, ti := range tis {
		out = append(out, ti.Intent)
	}
	return out
}

func resolvedIntents(s *stack) []intents.Intent { return intentsOf(s.trials.Intents) }

func (s *stack) run(t *testing.T, intent string, arm pairbench.Arm) pairbench.Row {
	t.Helper()
	var domain string
	for _, in := range s.trials.Plan.Intents {
		if in.ID == intent {
			domain = in.Domain
		}
	}
	job := rundir.Job{Intent: intent, Domain: domain, Stage: pairbench.StagePair, Pair: 0, Order: pairbench.AB, Attempt: 1}
	// A bound for a trial that hangs, well beyond its time cap and setup.
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	row, err := s.trials.Run(ctx, runner.TrialSpec{Job: job, Arm: arm, Dir: rundir.TrialDir(job, arm)})
	require.NoError(t, err)
	require.NoError(t, row.Validate(), "the row is valid rows.jsonl")
	return row
}

// TestTrialBothArmsForReal runs one control and one treatment trial of an
// example intent with Chromium, pi in bubblewrap behind the egress proxy,
// Playwright MCP and the scripted model.
func TestTrialBothArmsForReal(t *testing.T) {
	s := newStack(t, []string{"books-cheapest-by-author"}, model.Options{})

	control := s.run(t, "books-cheapest-by-author", pairbench.Control)
	treatment := s.run(t, "books-cheapest-by-author", pairbench.Treatment)

	for _, row := range []pairbench.Row{control, treatment} {
		assert.Equal(t, pairbench.Correct, row.Outcome, "%s: %s %s", row.Arm, row.Reason, row.Error)
		assert.ElementsMatch(t, runner.Allowlist(), row.ToolsDeclared, "%s declared exactly the allowlist", row.Arm)
		assert.Greater(t, row.CostUSD, 0.0)
		assert.Greater(t, row.Turns, 0)
		assert.Equal(t, pairbench.WebMCPPolyfill, row.WebMCPImpl, "%s: Chromium without WebMCPTesting runs the polyfill", row.Arm)

		b, err := os.ReadFile(filepath.Join(s.trials.RunDir.File(row.TrialDir), "transcript.jsonl"))
		require.NoError(t, err)
		assert.NotEmpty(t, b)
		assert.NotContains(t, string(b), "sk-host-secret-must-not-leak")
		assertTrialRecord(t, s.trials.RunDir.File(row.TrialDir), row, bytes.Count(b, []byte{'\n'}))
	}
	assert.True(t, treatment.Adopted, "treatment invoked the registered tool")
	require.NotEmpty(t, treatment.WebMCP)
	assert.Equal(t, "find_books", treatment.WebMCP[0].Tool)
	assert.Equal(t, "ok", treatment.WebMCP[0].Status)
	assert.False(t, control.Adopted)
	assert.Empty(t, control.WebMCP, "control had no tool to invoke")
	assert.Less(t, treatment.Turns, control.Turns, "the tool answers in fewer turns than driving the page")
}

// assertTrialRecord checks what a finished trial leaves for its page: a
// screenshot of the one size, and a timeline whose steps come in order,
// with a time for every transcript line and webmcp invocation.
func assertTrialRecord(t *testing.T, dir string, row pairbench.Row, transcriptLines int) {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, rundir.TrialScreenshot))
	require.NoError(t, err, "%s: a screenshot at the end of the trial", row.Arm)
	defer f.Close()
	cfg, err := png.DecodeConfig(f)
	require.NoError(t, err)
	assert.Equal(t, [2]int{rundir.ScreenshotWidth, rundir.ScreenshotHeight}, [2]int{cfg.Width, cfg.Height}, "same size in both arms")

	b, err := os.ReadFile(filepath.Join(dir, rundir.TrialTimeline))
	require.NoError(t, err)
	var tl rundir.Timeline
	require.NoError(t, json.Unmarshal(b, &tl))
	want := []string{rundir.StepSetup, rundir.StepBrowserOpening, rundir.StepBrowserOpen, rundir.StepPageLoaded, rundir.StepSetupDone,
		rundir.StepAgentLaunched, rundir.StepFirstTurn, rundir.StepAgentEnded, rundir.StepScreenshot, rundir.StepEnd}
	if row.Arm == pairbench.Treatment {
		want = slices.Insert(want, 3, rundir.StepToolsRegistered)
	}
	var steps []string
	at := map[string]int64{}
	for i, m := range tl.Marks {
		steps = append(steps, m.Step)
		at[m.Step] = m.AtMS
		if i > 0 {
			assert.GreaterOrEqual(t, m.AtMS, tl.Marks[i-1].AtMS, "%s: %s comes after %s", row.Arm, m.Step, tl.Marks[i-1].Step)
		}
	}
	assert.Equal(t, want, steps, row.Arm)
	assert.InDelta(t, row.StartDelayMS, at[rundir.StepAgentLaunched]-at[rundir.StepPageLoaded], 5, "the start delay sits between page load and launch")
	assert.InDelta(t, row.WallSeconds*1000, float64(at[rundir.StepAgentEnded]-at[rundir.StepAgentLaunched]), 5)
	assert.Len(t, tl.Transcript, transcriptLines, "a time per transcript line")
	for _, ms := range tl.Transcript {
		assert.True(t, ms >= at[rundir.StepAgentLaunched] && ms <= at[rundir.StepAgentEnded], "transcript line at %d ms, while the agent ran", ms)
	}
	require.Len(t, tl.WebMCP, len(row.WebMCP), "a start per webmcp invocation")
	for _, ms := range tl.WebMCP {
		assert.True(t, ms >= at[rundir.StepFirstTurn] && ms <= at[rundir.StepAgentEnded], "invocation at %d ms, while the agent ran", ms)
	}
}

// trial is a stack for one subtest that shares s's browsers and warm
// agent, the parts that take long to build, and owns everything a
// subtest changes: its own plan and intents (copies), its own scripted
// model with opts, and its own run directory. What one subtest breaks
// cannot reach another's trial.
func (s *stack) trial(t *testing.T, opts model.Options) *stack {
	t.Helper()
	plan := *s.trials.Plan
	tis := map[string]*runner.TrialIntent{}
	for id, ti := range s.trials.Intents {
		c := *ti
		tis[id] = &c
	}
	modelSrv := httptest.NewServer(model.New(intentsOf(tis), opts))
	t.Cleanup(modelSrv.Close)
	plan.Model.BaseURL = modelSrv.URL + "/v1"
	trials := *s.trials
	trials.RunDir, trials.Plan, trials.Intents = rundir.RunDir{Path: t.TempDir()}, &plan, tis
	return &stack{trials: &trials, browsers: s.browsers, agent: s.agent, model: modelSrv, tmp: s.tmp}
}

// TestTrialBadInputsEndAsOutcomes checks that each broken piece ends the
// trial with a clear outcome rather than a hang. The subtests share one
// stack's browsers and warm agent (building them is most of a subtest's
// time on a busy machine); each breaks only its own copy (stack.trial).
func TestTrialBadInputsEndAsOutcomes(t *testing.T) {
	shared := newStack(t, []string{"weather-high-oslo", "books-cheapest-by-author"}, model.Options{})
	t.Run("model returns errors", func(t *testing.T) {
		s := shared.trial(t, model.Options{Fault: model.FailFrom(1, 500)})
		row := s.run(t, "weather-high-oslo", pairbench.Control)
		assert.Contains(t, []pairbench.Outcome{pairbench.Aborted, pairbench.Crashed}, row.Outcome, row.Reason)
		assert.NotEmpty(t, row.Reason)
	})
	t.Run("turn cap", func(t *testing.T) {
		s := shared.trial(t, model.Options{})
		s.trials.Plan.Caps.Turns = 1
		row := s.run(t, "books-cheapest-by-author", pairbench.Control)
		assert.Equal(t, pairbench.Timeout, row.Outcome)
		assert.Equal(t, []pairbench.Cap{pairbench.CapTurns}, row.CapsHit)
	})
	t.Run("time cap", func(t *testing.T) {
		s := shared.trial(t, model.Options{})
		// A model that takes each request and never answers.
		var asked atomic.Bool
		stalled := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			asked.Store(true)
			_, _ = io.Copy(io.Discard, r.Body) // then the server notices the hang-up
			<-r.Context().Done()
		}))
		defer stalled.Close()
		s.trials.Plan.Model.BaseURL = stalled.URL + "/v1"
		s.trials.Plan.Caps.TimeS = 15
		row := s.run(t, "books-cheapest-by-author", pairbench.Control)
		assert.Equal(t, []pairbench.Cap{pairbench.CapTime}, row.CapsHit)
		if asked.Load() {
			assert.Equal(t, pairbench.Timeout, row.Outcome, row.Reason)
			return
		}
		// A machine so loaded that the agent never reached its first model
		// request within the cap: nothing was compared, so the trial is
		// aborted (and its pair reruns), and the reason says why.
		assert.Equal(t, pairbench.Aborted, row.Outcome, row.Reason)
		assert.Equal(t, "time cap hit before the agent declared its tools", row.Reason)
	})
	t.Run("spend cap", func(t *testing.T) {
		s := shared.trial(t, model.Options{})
		s.trials.Plan.Caps.SpendUSD = 0.000001
		row := s.run(t, "books-cheapest-by-author", pairbench.Control)
		assert.Equal(t, pairbench.Timeout, row.Outcome)
		assert.Equal(t, []pairbench.Cap{pairbench.CapSpend}, row.CapsHit)
	})
	t.Run("start page never loads", func(t *testing.T) {
		s := shared.trial(t, model.Options{})
		ln, err := net.Listen("tcp", "127.0.0.1:0") // accepts, never answers
		require.NoError(t, err)
		defer ln.Close()
		browsers, err := local.New(local.Config{TempDir: s.tmp, Resolver: noDNS{}, Hosts: map[string]string{"stall.test": ln.Addr().String()},
			ParseTimeout: 500 * time.Millisecond, LoadTimeout: 500 * time.Millisecond})
		require.NoError(t, err)
		t.Cleanup(func() { browsers.Close() })
		s.trials.Browsers = browsers
		s.trials.Intents["weather-high-oslo"].Intent.StartURL = "http://stall.test/"
		row := s.run(t, "weather-high-oslo", pairbench.Control)
		assert.Equal(t, pairbench.Aborted, row.Outcome)
		assert.Contains(t, row.Reason, "setup")
	})
	t.Run("start page refused by the browser policy", func(t *testing.T) {
		s := shared.trial(t, model.Options{})
		ln, err := net.Listen("tcp", "127.0.0.1:0") // this host's loopback: never the browser's
		require.NoError(t, err)
		defer ln.Close()
		s.trials.Intents["weather-high-oslo"].Intent.StartURL = "http://" + ln.Addr().String() + "/"
		row := s.run(t, "weather-high-oslo", pairbench.Control)
		assert.Equal(t, pairbench.Aborted, row.Outcome)
		assert.Contains(t, row.Reason, "refused by the browser's egress: it is a loopback address")
	})
	t.Run("entry tool missing", func(t *testing.T) {
		s := shared.trial(t, model.Options{})
		s.trials.Intents["weather-high-oslo"].Intent.EntryTool = "no_such_tool"
		row := s.run(t, "weather-high-oslo", pairbench.Treatment)
		assert.Equal(t, pairbench.Aborted, row.Outcome)
		assert.Contains(t, row.Reason, "no_such_tool")
	})
	t.Run("a tool file that fails in the page", func(t *testing.T) {
		s := shared.trial(t, model.Options{})
		// goja accepts the legacy octal escape in strict code; V8 does not.
		tool, err := intents.EvalTool(`"use strict";
const SEP = "\08";
({ name: "list_cities", description: "d", urlPatterns: ["http://weather.example/*"], execute() { return {}; } })`, intents.ToolLimits{})
		require.NoError(t, err)
		tool.Path = "domains/weather.example/tools/list_cities.js"
		s.trials.Intents["weather-high-oslo"].Tools = []intents.Tool{tool}
		row := s.run(t, "weather-high-oslo", pairbench.Treatment)
		assert.Equal(t, pairbench.Aborted, row.Outcome)
		assert.Contains(t, row.Reason, "setup: tool list_cities (domains/weather.example/tools/list_cities.js) did not register on http://weather.example/: "+
			"the browser cannot compile the file: SyntaxError: Octal escape sequences are not allowed in strict mode")
		require.Len(t, row.Unregistered, 1)
		assert.Equal(t, "list_cities", row.Unregistered[0].Tool)
	})
	t.Run("browser fails to start", func(t *testing.T) {
		_, err := local.New(local.Config{ChromiumPath: "/nonexistent/chromium"})
		assert.ErrorContains(t, err, "/nonexistent/chromium")
	})
	t.Run("agent binary missing", func(t *testing.T) {
		_, err := pi.New(pi.Config{Node: "/nonexistent/node", Package: tools.Path(pi.Package)})
		assert.ErrorContains(t, err, "/nonexistent/node")
		_, err = pi.New(pi.Config{Node: tools.Node(), Package: "/nonexistent/pi"})
		assert.ErrorContains(t, err, "/nonexistent/pi")
	})
}

// TestNoLeftovers checks that a trial leaves no Chromium, pi or sandbox
// directory behind, and no process.
func TestNoLeftovers(t *testing.T) {
	s := newStack(t, []string{"weather-high-oslo"}, model.Options{})
	s.run(t, "weather-high-oslo", pairbench.Treatment)
	require.NoError(t, s.browsers.Close()) // the next trial's spare browser
	require.NoError(t, s.agent.Close())    // the compile cache
	entries, err := os.ReadDir(s.tmp)
	require.NoError(t, err)
	assert.Empty(t, entries, "browser profile, sandbox and egress directories are removed")
	out, _ := exec.Command("pgrep", "-f", s.tmp).Output()
	assert.Empty(t, strings.TrimSpace(string(out)), "no process of the trial is left")
}

// TestTrialsOnlyReadTheCompileCache: Warm fills the compile cache with
// every module pi and Playwright MCP load, and a trial's agent leaves it
// exactly as it was: no agent can leave code for a later trial.
func TestTrialsOnlyReadTheCompileCache(t *testing.T) {
	s := newStack(t, []string{"weather-high-oslo"}, model.Options{})
	snapshot := func() map[string]string {
		files := map[string]string{}
		root := s.agent.CompileCache()
		require.NoError(t, filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			fi, err := d.Info()
			if err != nil {
				return err
			}
			files[path] = fmt.Sprint(fi.Size(), fi.ModTime().UnixNano())
			return nil
		}))
		return files
	}
	before := snapshot()
	require.Greater(t, len(before), 20, "pi's and Playwright MCP's modules are cached")
	s.run(t, "weather-high-oslo", pairbench.Treatment)
	assert.Equal(t, before, snapshot())
}

// TestFailedWarmUpLeavesNothing: a warm-up that cannot run (here its
// server cannot start) is an error, leaves no cache directory, and the
// agent runs on without a cache, as pairbench run does after warning.
func TestFailedWarmUpLeavesNothing(t *testing.T) {
	realstack.Need(t)
	tmp := sandboxtest.TempDir(t)
	exe, err := os.Executable()
	require.NoError(t, err)
	agent, err := pi.New(pi.Config{Node: tools.Node(), Package: tools.Path(pi.Package), ExtraPackages: tools.PlaywrightPackages(),
		Executable: exe, TempRoot: tmp})
	require.NoError(t, err)
	err = agent.Warm(context.Background(), runner.MCPServer{Name: "browser", Command: "/nonexistent/server", Listen: 8931})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no compile cache")
	assert.Empty(t, agent.CompileCache())
	entries, err := os.ReadDir(tmp)
	require.NoError(t, err)
	assert.Empty(t, entries, "no cache or sandbox directory left")
	require.NoError(t, agent.Close())
}
