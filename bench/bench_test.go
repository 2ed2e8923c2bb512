package bench_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pairbench/pairbench/rundir"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/bench"
	"github.com/pairbench/pairbench/intents"
	"github.com/pairbench/pairbench/internal/offline"
	"github.com/pairbench/pairbench/internal/realstack"
	"github.com/pairbench/pairbench/internal/sandboxtest"
	"github.com/pairbench/pairbench/runner"
	"github.com/pairbench/pairbench/sandbox"
)

// TestMain lets the test binary serve as the sandbox's init, as pairbench's
// main does: the sandbox re-executes the running binary. The tests run in a
// network namespace with loopback only (offline.Main): their browsers reach
// nothing beyond this machine.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == sandbox.InitArg {
		os.Exit(sandbox.RunInit(os.Args[2:]))
	}
	offline.Main(m)
}

func benchConfig(t *testing.T, registry string) bench.Config {
	t.Helper()
	tools, err := filepath.Abs("../tools/node_modules")
	require.NoError(t, err)
	// The time cap is as roomy as the agent contracts' (agenttest): on a
	// machine many times busier than this one an agent may take minutes to
	// declare its tools, and a trial stopped before that aborts.
	return bench.Config{Registry: registry, RunID: "r1", RunsDir: t.TempDir(), Pairs: 1, Slots: 1,
		Model: bench.ScriptedModel, Caps: rundir.PlanCaps{TimeS: 600, Turns: 30, SpendUSD: 1}, Seed: 7, Alpha: 0.05,
		Settle: 300 * time.Millisecond, Tools: tools, TempDir: sandboxtest.TempDir(t)}
}

// TestRegistryProblemsAreValues opens a bench of a broken registry: the
// error lists every problem by file and line, as intents' own Problems, and
// nothing of the run is made.
func TestRegistryProblemsAreValues(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "domains"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "bench", "intents", "x.example"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "bench", "intents", "x.example", "a.yaml"), []byte("id: a\ndomain: x.example\nnope: 1\n"), 0o644))
	cfg := benchConfig(t, dir)

	_, err := bench.Open(t.Context(), cfg)
	var regErr *bench.RegistryError
	require.ErrorAs(t, err, &regErr)
	assert.Equal(t, dir, regErr.Registry)
	var ps intents.Problems
	require.ErrorAs(t, err, &ps, "a caller that knows only package intents finds the problems too")
	assert.Equal(t, []intents.Problem(regErr.Problems), []intents.Problem(ps))
	var at3 bool
	for _, p := range ps {
		at3 = at3 || p.String() == filepath.Join(dir, "bench/intents/x.example/a.yaml")+":3: unknown field \"nope\""
	}
	assert.True(t, at3, "the unknown key is named at its line: %v", ps)
	assert.Contains(t, err.Error(), "`pairbench validate "+dir+"` lists them")
	assert.Contains(t, err.Error(), "\n  "+filepath.Join(dir, "bench/intents/x.example/a.yaml")+":3: unknown field \"nope\"",
		"the message quotes every problem, wherever it is shown")
	assert.NoDirExists(t, filepath.Join(cfg.RunsDir, cfg.RunID), "no run directory for a registry with problems")
}

// TestRegistryWithAFailingBaselineIsRefused opens a bench of a registry
// that loads cleanly but whose intent's known-correct answer fails its own
// rule, as validate reports: the bench refuses it the same way, before
// anything of the run is made.
func TestRegistryWithAFailingBaselineIsRefused(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.CopyFS(dir, os.DirFS("../examples/registry")))
	file := filepath.Join(dir, "bench/intents/weather.example/weather-high-oslo.yaml")
	b, err := os.ReadFile(file)
	require.NoError(t, err)
	require.Contains(t, string(b), "    high_c: 4\n")
	require.NoError(t, os.WriteFile(file, []byte(strings.Replace(string(b), "    high_c: 4\n", "    high_c: 41\n", 1)), 0o644))
	cfg := benchConfig(t, dir)

	_, err = bench.Open(t.Context(), cfg)
	var regErr *bench.RegistryError
	require.ErrorAs(t, err, &regErr)
	require.Len(t, regErr.Problems, 1)
	assert.Contains(t, regErr.Problems[0].String(), "weather-high-oslo.yaml:")
	assert.Contains(t, regErr.Problems[0].String(), "baseline answer grades wrong")
	assert.NoDirExists(t, filepath.Join(cfg.RunsDir, cfg.RunID))
}

// TestBenchRunsToItsReport runs a real one-pair bench (the example sites,
// local Chromium, pi in the sandbox, the scripted model) through Bench and
// checks what every hook saw and what the run left, locally and in the
// store.
func TestBenchRunsToItsReport(t *testing.T) {
	realstack.Need(t)
	cfg := benchConfig(t, "../examples/registry")
	cfg.Intents, cfg.ExampleSites, cfg.Store = []string{"weather-high-oslo"}, true, t.TempDir()

	var (
		mu       sync.Mutex
		started  []runner.TrialSpec
		rows     []pairbench.Row
		last     rundir.Progress
		problems []rundir.Problem
	)
	cfg.Hooks = bench.Hooks{
		Start:    func(s runner.TrialSpec) { mu.Lock(); started = append(started, s); mu.Unlock() },
		Row:      func(r pairbench.Row) { mu.Lock(); rows = append(rows, r); mu.Unlock() },
		Progress: func(p rundir.Progress) { mu.Lock(); last = p; mu.Unlock() },
		Problem:  func(p rundir.Problem) { mu.Lock(); problems = append(problems, p); mu.Unlock() },
	}
	res, err := bench.Bench(t.Context(), cfg)
	require.NoError(t, err)

	dir := rundir.RunDir{Path: filepath.Join(cfg.RunsDir, cfg.RunID)}
	assert.Equal(t, dir, res.Dir)
	plan, err := dir.ReadPlan()
	require.NoError(t, err)
	// On a busy machine an attempt may abort and its pair run again: the
	// hooks saw every attempt's trials, each planned trial scored once,
	// correct.
	assert.Len(t, started, len(rows), "every started trial recorded its row")
	final := scoredOnce(t, plan, rows)
	assert.Len(t, final, 2, "both arms of the one pair")
	for _, r := range final {
		assert.Equal(t, pairbench.Correct, r.Outcome, "%s: %s", r.Arm, r.Reason)
	}
	aborts := 0
	for _, r := range rows {
		if r.Outcome == pairbench.Aborted {
			aborts++
		}
	}
	assert.Equal(t, 1, last.Pairs)
	assert.Equal(t, 1, last.Done)
	assert.Equal(t, len(rows), last.Trials)
	assert.Equal(t, aborts, last.Aborts)
	assert.Zero(t, last.Running)
	assert.Empty(t, problems)

	assert.Equal(t, []string{dir.File("report.json"), dir.File("report.md"), dir.File("report.html")}, res.Reports)
	assert.Empty(t, plan.Model.BaseURL, "the scripted model's port is not frozen")
	for _, rel := range []string{"run.json", "rows.jsonl", "report.json", "report.md", "report.html"} {
		assert.FileExists(t, filepath.Join(cfg.Store, cfg.RunID, rel), "the store holds %s", rel)
	}

	// The run is done: opened again, it resumes to nothing.
	rows = nil
	res, err = bench.Bench(t.Context(), cfg)
	require.NoError(t, err)
	assert.Empty(t, rows, "a finished run has no trial left")
	assert.Len(t, res.Reports, 3)
}

// TestExecuteNeedsTheSmokeGate opens a bench and runs it without the gate.
func TestExecuteNeedsTheSmokeGate(t *testing.T) {
	realstack.Need(t)
	cfg := benchConfig(t, "../examples/registry")
	cfg.Intents = []string{"weather-high-oslo"}
	r, err := bench.Open(t.Context(), cfg)
	require.NoError(t, err)
	defer r.Close()
	assert.False(t, r.Resumed())
	assert.Error(t, r.Execute(t.Context()))
	_, err = r.Dir().ReadPlan()
	assert.True(t, errors.Is(err, os.ErrNotExist), "no run.json before the smoke gate passed")
}

// scoredOnce checks a finished run's rows against its plan, however many
// attempts aborted on a busy machine: each planned pair has one row per arm
// and attempt, attempts numbered 1, 2, ..., its arms in the pair's order,
// every attempt but the last aborted, and the last scored in both arms;
// nothing else. It returns the last attempts' rows: each planned trial
// scored exactly once.
func scoredOnce(t *testing.T, plan *rundir.Plan, rows []pairbench.Row) []pairbench.Row {
	t.Helper()
	type attempt struct {
		intent        string
		pair, attempt int
	}
	byAttempt := map[attempt][]pairbench.Row{}
	for _, r := range rows {
		k := attempt{r.Intent, r.Pair, r.Attempt}
		byAttempt[k] = append(byAttempt[k], r)
	}
	var final []pairbench.Row
	for _, in := range plan.Intents {
		for _, p := range in.Pairs {
			arms := p.Order.Arms()
			for a := 1; ; a++ {
				k := attempt{in.ID, p.Pair, a}
				trials, ok := byAttempt[k]
				delete(byAttempt, k)
				if !assert.True(t, ok, "%s pair %d: no attempt %d, nor a scored one before", in.ID, p.Pair, a) {
					break
				}
				require.LessOrEqual(t, len(trials), 2, "%s pair %d attempt %d: more than two trials", in.ID, p.Pair, a)
				aborted := false
				for i, r := range trials {
					assert.Equal(t, arms[i], r.Arm, "%s pair %d attempt %d: arms out of order", in.ID, p.Pair, a)
					aborted = aborted || r.Outcome == pairbench.Aborted
				}
				if !aborted {
					assert.Len(t, trials, 2, "%s pair %d attempt %d: an arm is missing", in.ID, p.Pair, a)
					final = append(final, trials...)
					break
				}
			}
		}
	}
	assert.Empty(t, byAttempt, "rows beyond the planned pairs' scored attempts")
	return final
}

func TestRegistryErrorQuotesAtMostFiftyProblems(t *testing.T) {
	var ps intents.Problems
	for i := range 60 {
		ps = append(ps, intents.Problem{Pos: intents.Pos{File: "bench/intents/a.example/a.yaml", Line: i + 1}, Msg: "wrong"})
	}
	msg := (&bench.RegistryError{Registry: "commit 0123456789ab", Git: true, Problems: ps}).Error()
	lines := strings.Split(msg, "\n")
	assert.Equal(t, "the registry at commit 0123456789ab has 60 problem(s):", lines[0])
	assert.Equal(t, "  bench/intents/a.example/a.yaml:1: wrong", lines[1])
	assert.Equal(t, "  ... and 10 more", lines[len(lines)-1])
	assert.Len(t, lines, 52)
}

// TestOpenRefusesBadAgentInput: an unknown agent, a model the agent cannot
// take and a missing key each stop Open with one line, before anything of
// the run is made.
func TestOpenRefusesBadAgentInput(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	for _, c := range []struct{ agent, model, want string }{
		{"aider", bench.ScriptedModel, `unknown agent "aider"; want one of pi, claude-code, codex`},
		{"claude-code", "openai/gpt-5", "claude-code speaks only the Anthropic Messages API"},
		{"codex", "openai/gpt-5", "model openai/gpt-5: OPENAI_API_KEY is not set"},
	} {
		cfg := benchConfig(t, "../examples/registry")
		cfg.Agent, cfg.Model = c.agent, c.model
		_, err := bench.Open(t.Context(), cfg)
		require.Error(t, err)
		assert.Contains(t, err.Error(), c.want)
		assert.NotContains(t, err.Error(), "\n", "one line")
		assert.NoDirExists(t, filepath.Join(cfg.RunsDir, cfg.RunID))
	}
}

// TestResumeWithAnotherAgentIsRefused: a run is benched with one agent. A
// resume naming another is refused, even with Force, and one naming none
// resumes only a pi run (the default).
func TestResumeWithAnotherAgentIsRefused(t *testing.T) {
	realstack.Need(t, realstack.NodeTools) // the agents' installs are checked before the plan
	cfg := benchConfig(t, "../examples/registry")
	cfg.Intents = []string{"weather-high-oslo"}
	reg, err := intents.Load(cfg.Registry)
	require.NoError(t, err)
	m, err := bench.ParseModel(cfg.Model, "")
	require.NoError(t, err)
	plan, _, err := runner.NewPlan(reg, runner.PlanOptions{RunID: cfg.RunID, Intents: cfg.Intents, Pairs: cfg.Pairs, Model: m,
		Caps: cfg.Caps, Seed: cfg.Seed, Alpha: cfg.Alpha, Now: time.Now(),
		Versions: rundir.Versions{AgentName: "codex", Agent: "0.171.0"}})
	require.NoError(t, err)
	dir := rundir.RunDir{Path: filepath.Join(cfg.RunsDir, cfg.RunID)}
	require.NoError(t, os.MkdirAll(dir.Path, 0o755))
	require.NoError(t, dir.WritePlan(plan))

	for _, c := range []struct {
		agent string
		force bool
		want  string
	}{
		{"claude-code", false, "run r1 is benched with codex, not claude-code; resume it with --agent codex"},
		{"claude-code", true, "run r1 is benched with codex, not claude-code"},
		{"", true, "run r1 is benched with codex, not pi"},
	} {
		cfg.Agent, cfg.Force = c.agent, c.force
		_, err := bench.Open(t.Context(), cfg)
		require.Error(t, err)
		assert.Contains(t, err.Error(), c.want)
	}
	after, err := dir.ReadPlan()
	require.NoError(t, err)
	assert.Equal(t, plan.CreatedAt, after.CreatedAt, "run.json is as it was")
	assert.Equal(t, "codex", after.Versions.AgentName)
}
