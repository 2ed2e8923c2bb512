// Package agenttest is the contract every agent adapter passes: the real
// agent, in the real sandbox, against the scripted model and a real browser
// on the example sites. A new agent is added to pairbench by passing it.
package agenttest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/agent/launch"
	"github.com/pairbench/pairbench/browser/local"
	"github.com/pairbench/pairbench/examples/site"
	"github.com/pairbench/pairbench/intents"
	"github.com/pairbench/pairbench/internal/realstack"
	"github.com/pairbench/pairbench/internal/sandboxtest"
	"github.com/pairbench/pairbench/model"
	"github.com/pairbench/pairbench/rundir"
	"github.com/pairbench/pairbench/runner"
)

// roomyTimeS is the time cap, in seconds, of the trials that must end
// otherwise than by it (correct, at a turn or spend cap, aborted): ten
// minutes, far above what such a trial takes even on a busy machine, where
// a claude-code treatment once took more than the two minutes it had.
const roomyTimeS = 600

// Adapter is an agent adapter under test.
type Adapter struct {
	// New returns the agent, reading provider variables from hostEnv,
	// keeping its per-run directories under tempRoot, its egress proxy
	// reaching the model's host through network.
	New func(t testing.TB, hostEnv []string, tempRoot string, network launch.Network) runner.Agent
	// Missing returns the error New gives when the agent is not installed.
	Missing func() error
	// Stream returns a fresh parser of the agent's output, for the
	// malformed-output check.
	Stream func(caps runner.Caps, m rundir.Model) launch.Stream
	// Output is a well-formed line of the agent's output that counts one
	// model turn.
	Output string
	// HarnessTools join the allowlist (runner.PlanOptions.HarnessTools).
	HarnessTools []string
	// Warm, when set, is called once on the agent before its trials.
	Warm func(t testing.TB, a runner.Agent, browserMCP runner.BrowserMCPFunc)
	// Provider is the provider whose API the agent speaks to a real model
	// ("openai" or "anthropic"); KeyEnv the host variable of its key and
	// KeyHeader the header the provider reads it from ("x-api-key", or
	// "Authorization" as "Bearer KEY").
	Provider, KeyEnv, KeyHeader string
}

// canary is a provider key on the host: it must not reach the sandbox, the
// transcript, the diagnostics or the scripted model (which needs no key).
const canary = "sk-host-canary-must-not-leak-7f3a9c"

// hostEnv is the host environment every adapter under test reads keys from.
var hostEnv = []string{"OPENAI_API_KEY=" + canary, "ANTHROPIC_API_KEY=" + canary, "HOME=/root"}

// Tools locates the pinned tools, from the test's package directory up.
func Tools(t testing.TB) launch.Tools {
	t.Helper()
	realstack.Need(t)
	return launch.Tools{NodeModules: realstack.NodeModules(t)}
}

// recorder remembers every request the model got: its body with its key
// headers, every header, and the value of keyHeader.
type recorder struct {
	mu        sync.Mutex
	bodies    []string
	headers   []string
	keyHeader string
	keys      []string
	posts     int // model calls
	next      http.Handler
}

func (r *recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	b, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	r.bodies = append(r.bodies, req.Header.Get("Authorization")+req.Header.Get("X-Api-Key")+"\n"+string(b))
	r.headers = append(r.headers, fmt.Sprint(req.Header))
	if r.keyHeader != "" {
		r.keys = append(r.keys, req.Header.Get(r.keyHeader))
	}
	if req.Method == http.MethodPost && !strings.Contains(req.URL.Path, "count_tokens") {
		r.posts++
	}
	r.mu.Unlock()
	req.Body = io.NopCloser(strings.NewReader(string(b)))
	r.next.ServeHTTP(w, req)
}

// calls returns how many model calls the model got.
func (r *recorder) calls() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.posts
}

func (r *recorder) all() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.bodies, "\n")
}

// bench is a trial stack for one adapter.
type bench struct {
	t        *testing.T
	a        Adapter
	agent    runner.Agent
	reg      *intents.Registry
	browsers *local.Provider
	mcp      runner.BrowserMCPFunc
	tmp      string
}

// Run runs the contract against a.
func Run(t *testing.T, a Adapter) {
	tools := Tools(t)
	siteSrv := httptest.NewServer(site.New())
	t.Cleanup(siteSrv.Close)
	hosts := map[string]string{}
	for _, h := range site.Hosts() {
		hosts[h] = siteSrv.Listener.Addr().String()
	}
	tmp := sandboxtest.TempDir(t) // a root launcher's sandbox users reach their directories here
	browsers, err := local.New(local.Config{Hosts: hosts, TempDir: tmp})
	require.NoError(t, err)
	t.Cleanup(func() { browsers.Close() })
	reg, err := intents.Load(filepath.Join(filepath.Dir(filepath.Dir(tools.NodeModules)), "examples", "registry"))
	require.NoError(t, err)
	b := &bench{t: t, a: a, reg: reg, browsers: browsers, mcp: tools.BrowserMCP(250 * time.Millisecond), tmp: tmp}
	b.agent = a.New(t, hostEnv, tmp, launch.Network{})
	if a.Warm != nil {
		a.Warm(t, b.agent, b.mcp)
	}

	t.Run("missing", func(t *testing.T) {
		err := a.Missing()
		require.Error(t, err)
		assert.Contains(t, err.Error(), "make setup", "the error says how to install it")
	})
	t.Run("malformed output", func(t *testing.T) {
		s := a.Stream(runner.Caps{}, scripted())
		garbage := "not json\n{\"type\": \n\x00\xff\xfe\n" + strings.Repeat("x", 300<<10) + "\n" + a.Output + "\n{\"type\":\"assistant\",\"message\":7}\n[1,2]\n"
		c, err := s.Feed(strings.NewReader(garbage))
		require.NoError(t, err)
		assert.Empty(t, c)
		assert.Equal(t, 1, s.Result().Turns, "the well-formed line still counts, the rest is skipped")
	})
	t.Run("smoke", func(t *testing.T) {
		srv, rec := b.model(nil)
		m := scripted()
		m.BaseURL = srv + "/v1"
		_, err := runner.SmokeAgent(t.Context(), b.agent, m, b.tmp, a.HarnessTools...)
		require.NoError(t, err, "answers, declares no tool, costs more than 0")
		assert.NotContains(t, rec.all(), canary)
	})
	t.Run("trial", func(t *testing.T) {
		for _, arm := range pairbench.Arms {
			row, dir := b.trial(t, "weather-high-oslo", arm, rundir.PlanCaps{TimeS: roomyTimeS, Turns: 25, SpendUSD: 1}, nil)
			assert.Equal(t, pairbench.Correct, row.Outcome, "%s: %s", arm, row.Reason)
			assert.Positive(t, row.CostUSD)
			assert.Positive(t, row.Turns)
			b.noCanary(t, dir)
			checkSteps(t, dir, row)
			if arm == pairbench.Treatment {
				assert.True(t, row.Adopted, "treatment calls the page's tool through webmcp")
			}
		}
	})
	t.Run("turn cap", func(t *testing.T) {
		// The caps are hard: the turn past the cap is stopped before its
		// model call, so the model answers exactly the capped turns.
		for _, turns := range []int{1, 2} {
			row, _, rec := b.trialRec(t, "weather-high-oslo", pairbench.Control, rundir.PlanCaps{TimeS: roomyTimeS, Turns: turns, SpendUSD: 1}, nil)
			assert.Equal(t, pairbench.Timeout, row.Outcome, row.Reason)
			assert.Equal(t, []pairbench.Cap{pairbench.CapTurns}, row.CapsHit)
			assert.Equal(t, turns, row.Turns, "the row records the capped turns, no more")
			assert.LessOrEqual(t, rec.calls(), turns, "no model call past the cap")
		}
	})
	t.Run("spend cap", func(t *testing.T) {
		row, _, rec := b.trialRec(t, "weather-high-oslo", pairbench.Control, rundir.PlanCaps{TimeS: roomyTimeS, Turns: 25, SpendUSD: 0.000001}, nil)
		assert.Equal(t, pairbench.Timeout, row.Outcome, row.Reason)
		assert.Equal(t, []pairbench.Cap{pairbench.CapSpend}, row.CapsHit)
		assert.Equal(t, 1, rec.calls(), "the first turn passed the cap: no second model call")
		// A cap two turns fit under: the third, as dear as the dearest,
		// would pass it, so the agent is stopped before it.
		first, _, _ := b.trialRec(t, "weather-high-oslo", pairbench.Control, rundir.PlanCaps{TimeS: roomyTimeS, Turns: 1, SpendUSD: 1}, nil)
		limit := first.CostUSD * 2.5
		row, _, rec = b.trialRec(t, "weather-high-oslo", pairbench.Control, rundir.PlanCaps{TimeS: roomyTimeS, Turns: 25, SpendUSD: limit}, nil)
		if row.CapsHit != nil {
			assert.Equal(t, []pairbench.Cap{pairbench.CapSpend}, row.CapsHit)
			assert.LessOrEqual(t, row.CostUSD, limit, "stopped before the turn that would pass the cap")
		}
	})
	t.Run("stalled model", func(t *testing.T) {
		// The model answers the first request and stalls on every later
		// one: by then the agent has declared its tools.
		var asked atomic.Bool
		stall := func(n int) *model.Fault {
			asked.Store(true)
			if n < 2 {
				return nil
			}
			return &model.Fault{Stall: true}
		}
		start := time.Now()
		row, _ := b.trial(t, "weather-high-oslo", pairbench.Control, rundir.PlanCaps{TimeS: 20, Turns: 25, SpendUSD: 1}, stall)
		assert.Equal(t, []pairbench.Cap{pairbench.CapTime}, row.CapsHit)
		if asked.Load() {
			assert.Equal(t, pairbench.Timeout, row.Outcome, row.Reason)
		} else {
			// So loaded a machine that the agent never reached the model
			// within the cap: aborted (its pair reruns), saying why.
			assert.Equal(t, pairbench.Aborted, row.Outcome, row.Reason)
			assert.Equal(t, "time cap hit before the agent declared its tools", row.Reason)
		}
		// Well before the trial's context would end it (the stall never
		// ends by itself), with room for a busy machine's teardown.
		assert.Less(t, time.Since(start), 3*time.Minute, "the time cap stops it")
	})
	t.Run("declared tools", func(t *testing.T) {
		// The allowlist names a browser tool no server offers: the agent
		// cannot declare it, and the adapter reports what the CLI really
		// declared, so the trial is aborted as not comparable.
		row, _ := b.trial(t, "weather-high-oslo", pairbench.Control, rundir.PlanCaps{TimeS: roomyTimeS, Turns: 25, SpendUSD: 1}, nil,
			func(p *rundir.Plan) { p.Allowlist = append(p.Allowlist, "mcp__browser__browser_teleport") })
		assert.Equal(t, pairbench.Aborted, row.Outcome, row.Reason)
		assert.Equal(t, "declared tools differ from the allowlist: missing mcp__browser__browser_teleport", row.Reason)
		assert.NotContains(t, row.ToolsDeclared, "mcp__browser__browser_teleport")
		assert.Contains(t, row.ToolsDeclared, "mcp__pairbench__webmcp", "what the agent declared is recorded")
	})
	t.Run("60-character tool name", b.longNames)
	t.Run("real key", func(t *testing.T) { b.realKey(t) })
	t.Run("model errors", func(t *testing.T) {
		row, _ := b.trial(t, "weather-high-oslo", pairbench.Control, rundir.PlanCaps{TimeS: roomyTimeS, Turns: 25, SpendUSD: 1}, model.FailFrom(1, 400))
		assert.NotEqual(t, pairbench.Correct, row.Outcome)
		assert.Contains(t, row.Error, "injected failure", "the model's error is recorded: %s", row.Reason)
	})
}

func scripted() rundir.Model {
	return rundir.Model{Provider: "pairbench", ID: model.ID, Scripted: true, KeyEnv: "PAIRBENCH_MODEL_KEY", InputPrice: 3, OutputPrice: 15}
}

// model serves the scripted model for the registry's intents, injecting
// fault, and records what it got.
func (b *bench) model(fault func(int) *model.Fault) (string, *recorder) {
	rec := &recorder{next: b.scriptedModel(fault)}
	srv := httptest.NewServer(rec)
	b.t.Cleanup(srv.Close)
	return srv.URL, rec
}

// scriptedModel is the scripted model for the registry's intents,
// injecting fault.
func (b *bench) scriptedModel(fault func(int) *model.Fault) http.Handler {
	var known []intents.Intent
	plan, _, err := runner.NewPlan(b.reg, runner.PlanOptions{RunID: "c", Pairs: 1, Seed: 1, Alpha: 0.05, Now: time.Now(), Model: scripted()})
	require.NoError(b.t, err)
	tis, err := runner.TrialIntents(b.reg, plan)
	require.NoError(b.t, err)
	for _, ti := range tis {
		known = append(known, ti.Intent)
	}
	return model.New(known, model.Options{Fault: fault})
}

// trial runs one trial of intent in arm with caps, the scripted model
// injecting fault and the plan changed by edit, and returns its row and
// its directory.
func (b *bench) trial(t *testing.T, intent string, arm pairbench.Arm, caps rundir.PlanCaps, fault func(int) *model.Fault, edit ...func(*rundir.Plan)) (pairbench.Row, string) {
	t.Helper()
	row, dir, _ := b.trialRec(t, intent, arm, caps, fault, edit...)
	return row, dir
}

// trialRec is trial, returning what the model got too.
func (b *bench) trialRec(t *testing.T, intent string, arm pairbench.Arm, caps rundir.PlanCaps, fault func(int) *model.Fault, edit ...func(*rundir.Plan)) (pairbench.Row, string, *recorder) {
	t.Helper()
	url, rec := b.model(fault)
	m := scripted()
	m.BaseURL = url + "/v1"
	row, dir := b.trialOf(t, b.agent, m, intent, arm, caps, edit...)
	assert.NotContains(t, rec.all(), canary, "the host's key never reaches the model")
	return row, dir, rec
}

// trialOf runs one trial of intent in arm with caps, ag talking to m, the
// plan changed by edit first.
func (b *bench) trialOf(t *testing.T, ag runner.Agent, m rundir.Model, intent string, arm pairbench.Arm, caps rundir.PlanCaps, edit ...func(*rundir.Plan)) (pairbench.Row, string) {
	t.Helper()
	plan, _, err := runner.NewPlan(b.reg, runner.PlanOptions{RunID: "c", Intents: []string{intent}, Pairs: 1, Seed: 1,
		Alpha: 0.05, Now: time.Now(), Model: m, Caps: caps, HarnessTools: b.a.HarnessTools})
	require.NoError(t, err)
	for _, e := range edit {
		e(plan)
	}
	tis, err := runner.TrialIntents(b.reg, plan)
	require.NoError(t, err)
	trials := &runner.Trials{RunDir: rundir.RunDir{Path: t.TempDir()}, Plan: plan, Intents: tis, Browsers: b.browsers, Agent: ag, BrowserMCP: b.mcp}
	job := rundir.Job{Intent: intent, Domain: plan.Intents[0].Domain, Stage: pairbench.StagePair, Pair: 0, Order: pairbench.AB, Attempt: 1}
	ctx, cancel := context.WithTimeout(t.Context(), 2*roomyTimeS*time.Second)
	defer cancel()
	spec := runner.TrialSpec{Job: job, Arm: arm, Dir: rundir.TrialDir(job, arm)}
	row, err := trials.Run(ctx, spec)
	require.NoError(t, err)
	require.NoError(t, row.Validate(), "the row is valid rows.jsonl")
	return row, trials.RunDir.File(spec.Dir)
}

// checkSteps checks the trial's steps.jsonl in dir: the agent's turns as
// the viewer shows them, written while it ran, ending in the answer the
// row graded; treatment's include the webmcp call and its result.
func checkSteps(t *testing.T, dir string, row pairbench.Row) {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, rundir.TrialSteps))
	require.NoError(t, err, "the adapter writes the steps")
	defer f.Close()
	steps, err := rundir.ReadSteps(f)
	require.NoError(t, err)
	require.NotEmpty(t, steps)
	var tl rundir.Timeline
	b, err := os.ReadFile(filepath.Join(dir, rundir.TrialTimeline))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &tl))
	at := map[string]int64{}
	for _, m := range tl.Marks {
		at[m.Step] = m.AtMS
	}
	var calls, results []string
	last := ""
	for i, s := range steps {
		assert.GreaterOrEqual(t, s.AtMS, at[rundir.StepAgentLaunched], "step %d: written after the agent was launched", i)
		assert.LessOrEqual(t, s.AtMS, at[rundir.StepAgentEnded], "step %d: written before it ended", i)
		if i > 0 {
			assert.GreaterOrEqual(t, s.AtMS, steps[i-1].AtMS, "step %d: in the order written", i)
		}
		switch s.Kind {
		case rundir.CallStep:
			calls = append(calls, s.Tool)
			assert.True(t, s.Turn > 0, "step %d: a call belongs to a turn", i)
		case rundir.ResultStep:
			results = append(results, s.Tool)
		case rundir.TextStep:
			last = s.Text
		}
	}
	assert.Equal(t, calls, results, "each call has its result, in order")
	assert.Contains(t, last, strings.TrimSpace(row.Answer.Raw), "the last text is the answer")
	if row.Arm == pairbench.Treatment {
		assert.Contains(t, calls, "mcp__pairbench__webmcp")
	}
}

// noCanary checks that nothing the trial left holds the host's key.
func (b *bench) noCanary(t *testing.T, dir string) {
	t.Helper()
	n := 0
	require.NoError(t, filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		n++
		assert.NotContains(t, string(data), canary, "%s holds the host's key", p)
		return nil
	}))
	require.Positive(t, n, fmt.Sprintf("the trial left files in %s", dir))
	_, err := os.Stat(filepath.Join(dir, "transcript.jsonl"))
	assert.NoError(t, err, "the transcript is kept")
}
