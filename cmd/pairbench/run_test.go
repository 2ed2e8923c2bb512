package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/internal/clitest"
	"github.com/pairbench/pairbench/internal/realstack"
	"github.com/pairbench/pairbench/rundir"
	"github.com/pairbench/pairbench/viewer"
)

func TestRunFlagErrorsExitTwo(t *testing.T) {
	for _, args := range [][]string{
		{"run"},
		{"run", "a", "b"},
		{"run", "../../examples/registry", "--pairs", "0"},
		{"run", "../../examples/registry", "--shard", "4/3"},
		{"run", "../../examples/registry", "--shard", "x"},
		{"run", "../../examples/registry", "--alpha", "2"},
		{"run", "../../examples/registry", "--run-id", "../escape"},
		{"run", "../../examples/registry", "--model", "nonsense"},
		{"run", "../../examples/registry", "--log-format", "xml"},
		{"run", "../../examples/registry", "--no-such-flag"},
		{"run", "../../examples/registry", "--host", "books.example"},
		{"run", "../../examples/registry", "--intent", "no-such-intent", "--runs-dir", t.TempDir()},
	} {
		code, _, stderr := runCLI(t, args...)
		assert.Equal(t, exitUsage, code, "%v: %s", args, stderr)
		assert.NotEmpty(t, stderr, "%v says why", args)
	}
}

func TestRunBrokenRegistryListsProblems(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "bench", "intents", "x.example"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "bench", "intents", "x.example", "a.yaml"), []byte("id: a\ndomain: x.example\n"), 0o644))
	code, _, stderr := runCLI(t, "run", dir, "--runs-dir", t.TempDir())
	assert.Equal(t, exitFailure, code)
	assert.Contains(t, stderr, "a.yaml:")
	assert.Contains(t, stderr, "pairbench validate")
}

// TestRunFromGitAtAPinnedCommit plans a registry read from a git
// repository: run.json records the commit, and the report names the source.
// The plan is enough (--plan-only passes the smoke gate and freezes
// run.json): trials of a registry fetched from git run in
// TestServeEndToEnd (the local backend benches at the pull request's head).
func TestRunFromGitAtAPinnedCommit(t *testing.T) {
	realstack.Need(t)
	repo := t.TempDir()
	require.NoError(t, os.CopyFS(filepath.Join(repo, "reg"), os.DirFS("../../examples/registry")))
	for _, args := range [][]string{{"init", "--quiet", "-b", "main"}, {"add", "."}, {"commit", "--quiet", "-m", "registry"}} {
		cmd := exec.Command("git", append([]string{"-C", repo}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
			"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com", "GIT_CONFIG_GLOBAL=/dev/null")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, string(out))
	}
	runs := t.TempDir()
	code, _, stderr := runCLI(t, "run", "reg", "--git-repo", repo, "--git-ref", "main", "--git-cache", filepath.Join(t.TempDir(), "cache"),
		"--example-sites", "--intent", "weather-high-oslo", "--pairs", "1", "--start-delay", "0",
		"--run-id", "g1", "--runs-dir", runs, "--tools", "../../tools/node_modules", "--plan-only")
	require.Equal(t, exitOK, code, stderr)
	plan, err := rundir.ReadPlan(filepath.Join(runs, "g1", "run.json"))
	require.NoError(t, err)
	assert.Equal(t, repo, plan.Source.Repo)
	assert.Len(t, plan.Source.Commit, 40)
	code, _, stderr = runCLI(t, "report", filepath.Join(runs, "g1"))
	require.Equal(t, exitOK, code, stderr)
	md, err := os.ReadFile(filepath.Join(runs, "g1", "report.md"))
	require.NoError(t, err)
	assert.Contains(t, string(md), plan.Source.Commit[:12])
}

func TestRunRefusesAPlanOverItsBudget(t *testing.T) {
	realstack.Need(t)
	runs := t.TempDir()
	code, _, stderr := runCLI(t, "run", "../../examples/registry", "--example-sites", "--intent", "weather-high-oslo",
		"--pairs", "4", "--spend-cap", "0.5", "--budget-usd", "1", "--run-id", "b1", "--runs-dir", runs,
		"--tools", "../../tools/node_modules")
	assert.Equal(t, exitFailure, code)
	assert.Contains(t, stderr, "smoke gate: budget: 8 trials at up to $0.50 each may spend $4.00, over the $1.00 budget")
	assert.NoFileExists(t, filepath.Join(runs, "b1", "run.json"), "a run stopped by the smoke gate freezes no plan")
	assert.NoDirExists(t, filepath.Join(runs, "b1"), "and leaves no run directory (it left one holding .lock)")
}

// TestARunIsOneThing runs a real one-pair bench with a directory store: it
// scores and reports, and run again it finds nothing to do. Then it tries
// what issue 21 found accepted in silence: a fresh runner on the same
// store resumes from it instead of rerunning and overwriting its rows; a
// store that is the runs directory, rows whose plan is gone and a shard
// without a stored plan are refused; a resume with other caps, seed, alpha
// or start delay, or an edited tool file, is refused with the change
// named, and --force resumes it as planned with the report naming what it
// forced past.
func TestARunIsOneThing(t *testing.T) {
	realstack.Need(t)
	tools, err := filepath.Abs("../../tools/node_modules")
	require.NoError(t, err)
	reg := t.TempDir()
	require.NoError(t, os.CopyFS(reg, os.DirFS("../../examples/registry")))
	root := t.TempDir()
	store := filepath.Join(root, "store")
	runsA, runsB := filepath.Join(root, "a"), filepath.Join(root, "b")
	args := func(runs string, more ...string) []string {
		return append([]string{"run", reg, "--example-sites", "--intent", "weather-high-oslo", "--pairs", "1",
			"--start-delay", "0", "--run-id", "r1", "--runs-dir", runs, "--store", store, "--tools", tools, "--seed", "7"}, more...)
	}
	code, stdout, stderr := runCLI(t, args(runsA)...)
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stdout, "report.html")
	// On a busy machine an attempt may abort and its pair run again: the
	// run is complete, each arm scored once in the pair's last attempt,
	// correct.
	first := clitest.CheckCompleteRun(t, filepath.Join(runsA, "r1"))
	last := 0
	for _, r := range first {
		last = max(last, r.Attempt)
	}
	scored := 0
	for _, r := range first {
		if r.Attempt == last {
			scored++
			assert.Equal(t, pairbench.Correct, r.Outcome, "%s %s: %s", r.Intent, r.Arm, r.Reason)
		}
	}
	assert.Equal(t, 2, scored, "both arms of the one pair")
	for _, f := range []string{"run.json", "report.json", "report.md", "report.html"} {
		assert.FileExists(t, filepath.Join(runsA, "r1", f))
	}

	// The same command again: the run is finished, nothing runs.
	code, _, stderr = runCLI(t, args(runsA)...)
	require.Equal(t, exitOK, code, stderr)
	assert.Equal(t, first, clitest.ReadRows(t, filepath.Join(runsA, "r1", "rows.jsonl")), "a finished run resumes to nothing")

	// A CI job re-run on a fresh machine: same store, empty runs dir.
	code, _, stderr = runCLI(t, args(runsB)...)
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stderr, fmt.Sprintf("took %d rows from the store", len(first)), "every row, aborted attempts too")
	assert.Equal(t, first, clitest.ReadRows(t, filepath.Join(runsB, "r1", "rows.jsonl")), "nothing ran again")
	assert.Equal(t, first, clitest.ReadRows(t, filepath.Join(store, "r1", "rows.jsonl")), "the stored rows are the first runner's")
	// The fresh runner's report shows the earlier pair whole: its trial
	// directories came with its rows.
	pairPage, err := os.ReadFile(filepath.Join(runsB, "r1", viewer.PairPage("weather-high-oslo", 0)))
	require.NoError(t, err, "the fresh runner's report has the pair's page")
	assert.Equal(t, 2, strings.Count(string(pairPage), `<img src="../../trials/`), "both arms' screenshots")
	assert.NotContains(t, string(pairPage), "has no transcript.jsonl")
	assert.NotContains(t, string(pairPage), "No screenshot.")
	steps, err := filepath.Glob(filepath.Join(runsB, "r1", "trials", "weather-high-oslo", "0-*", "steps.jsonl"))
	require.NoError(t, err)
	assert.GreaterOrEqual(t, len(steps), 2, "both arms' steps came with their trial directories")

	// The store is the runs directory, spelt otherwise.
	for _, loc := range []string{"file://" + runsA, runsA + "/../a"} {
		a := args(runsA)
		a[slices.Index(a, store)] = loc
		code, _, stderr = runCLI(t, a...)
		assert.Equal(t, exitFailure, code, loc)
		assert.Contains(t, stderr, "a store must be another place than --runs-dir", loc)
	}

	// A shard of a run nobody planned.
	code, _, stderr = runCLI(t, "run", reg, "--example-sites", "--intent", "weather-high-oslo", "--run-id", "r2",
		"--runs-dir", runsA, "--store", store, "--tools", tools, "--shard", "1/2")
	assert.Equal(t, exitFailure, code)
	assert.Contains(t, stderr, "holds no plan; plan the run once with `pairbench run --plan-only")
	assert.NoDirExists(t, filepath.Join(runsA, "r2"), "a refused shard leaves nothing behind")

	for _, c := range []struct {
		flags []string
		want  string
	}{
		{[]string{"--seed", "8"}, "seed: 7 → 8"},
		{[]string{"--alpha", "0.1"}, "alpha: 0.05 → 0.1"},
		{[]string{"--start-delay", "2s"}, "start delay: 0s → 2s"},
		{[]string{"--settle", "1s"}, "settle: 300ms → 1s"},
		{[]string{"--turn-cap", "7"}, "caps"},
	} {
		code, _, stderr = runCLI(t, args(runsA, c.flags...)...)
		assert.Equal(t, exitFailure, code, "%v", c.flags)
		assert.Contains(t, stderr, "planned differently", "%v", c.flags)
		assert.Contains(t, stderr, c.want, "%v", c.flags)
	}

	tool := filepath.Join(reg, "domains", "weather.example", "tools", "list_cities.js")
	b, err := os.ReadFile(tool)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(tool, append(b, []byte("\n// edited after the run was planned\n")...), 0o644))
	code, _, stderr = runCLI(t, args(runsA)...)
	assert.Equal(t, exitFailure, code)
	assert.Contains(t, stderr, "weather-high-oslo: domains/weather.example/tools/list_cities.js changed")
	code, _, stderr = runCLI(t, args(runsA, "--force")...)
	require.Equal(t, exitOK, code, stderr)
	md, err := os.ReadFile(filepath.Join(runsA, "r1", "report.md"))
	require.NoError(t, err)
	assert.Contains(t, string(md), "resumed with --force past changes to its plan")
	assert.Contains(t, string(md), `list\_cities.js changed`, "named, Markdown-escaped")
	stored, err := os.ReadFile(filepath.Join(store, "r1", "report.md"))
	require.NoError(t, err)
	assert.Equal(t, md, stored, "the store holds the report naming it")
	code, _, stderr = runCLI(t, args(runsA, "--turn-cap", "7", "--force")...)
	assert.Equal(t, exitOK, code, "--force past other caps: %s", stderr)

	// The plan is lost, the rows are not.
	require.NoError(t, os.Remove(filepath.Join(runsB, "r1", "run.json")))
	code, _, stderr = runCLI(t, append(args(runsB, "--force"), "--store", filepath.Join(root, "other"))...)
	assert.Equal(t, exitFailure, code)
	assert.Contains(t, stderr, "holds rows (rows.jsonl) but no run.json")
}

// TestRunBudgetCountsTheSmokeGate plans one pair whose two trials fit the
// budget exactly at their caps: the smoke gate's own zero-tool run spends
// some of it, so the gate refuses the plan (no trial may pass the budget).
func TestRunBudgetCountsTheSmokeGate(t *testing.T) {
	realstack.Need(t)
	runs := t.TempDir()
	code, _, stderr := runCLI(t, "run", "../../examples/registry", "--example-sites", "--intent", "weather-high-oslo",
		"--pairs", "1", "--spend-cap", "0.004", "--budget-usd", "0.008", "--run-id", "b2", "--runs-dir", runs,
		"--tools", "../../tools/node_modules")
	assert.Equal(t, exitFailure, code)
	assert.Contains(t, stderr, "smoke gate: budget: 2 trials at up to $0.0040 each may spend $0.0080, and $")
	assert.Contains(t, stderr, "is spent already (the smoke gate, earlier runners): over the $0.0080 budget")
	assert.NoDirExists(t, filepath.Join(runs, "b2"), "a run stopped by the smoke gate leaves nothing behind")
}
