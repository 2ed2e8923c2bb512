package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/runner"
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

// TestRunResumes runs a real two-pair bench, then checks that a rerun of the
// same id finds nothing to do, and that a changed plan is refused unless
// forced.
func TestRunResumes(t *testing.T) {
	runs := t.TempDir()
	args := []string{"run", "../../examples/registry", "--example-sites", "--intent", "weather-high-oslo",
		"--pairs", "2", "--slots", "2", "--start-delay", "0", "--run-id", "r1", "--runs-dir", runs,
		"--tools", "../../tools/node_modules", "--seed", "7"}
	code, stdout, stderr := runCLI(t, args...)
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stdout, "report.html")
	dir := filepath.Join(runs, "r1")
	rows := readRows(t, filepath.Join(dir, "rows.jsonl"))
	require.Len(t, rows, 4)
	for _, r := range rows {
		assert.Equal(t, pairbench.Correct, r.Outcome, "%s %s: %s", r.Intent, r.Arm, r.Reason)
	}
	for _, f := range []string{"run.json", "report.json", "report.md", "report.html"} {
		assert.FileExists(t, filepath.Join(dir, f))
	}

	code, _, stderr = runCLI(t, args...)
	require.Equal(t, exitOK, code, stderr)
	assert.Len(t, readRows(t, filepath.Join(dir, "rows.jsonl")), 4, "a finished run resumes to nothing")

	changed := append(append([]string{}, args...), "--turn-cap", "7")
	code, _, stderr = runCLI(t, changed...)
	assert.Equal(t, exitFailure, code)
	assert.Contains(t, stderr, "planned differently")
	assert.Contains(t, stderr, "caps")

	code, _, stderr = runCLI(t, append(changed, "--force")...)
	assert.Equal(t, exitOK, code, stderr)
}

func readRows(t *testing.T, name string) []pairbench.Row {
	t.Helper()
	f, err := os.Open(name)
	require.NoError(t, err)
	defer f.Close()
	rows, _, err := pairbench.ReadRows(f)
	require.NoError(t, err)
	return rows
}

// TestRunFromGitAtAPinnedCommit benches a registry read from a git
// repository: run.json records the commit, and the report names the source.
func TestRunFromGitAtAPinnedCommit(t *testing.T) {
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
		"--run-id", "g1", "--runs-dir", runs, "--tools", "../../tools/node_modules")
	require.Equal(t, exitOK, code, stderr)
	plan, err := runner.ReadPlan(filepath.Join(runs, "g1", "run.json"))
	require.NoError(t, err)
	assert.Equal(t, repo, plan.Source.Repo)
	assert.Len(t, plan.Source.Commit, 40)
	md, err := os.ReadFile(filepath.Join(runs, "g1", "report.md"))
	require.NoError(t, err)
	assert.Contains(t, string(md), plan.Source.Commit[:12])
}

func TestRunRefusesAPlanOverItsBudget(t *testing.T) {
	runs := t.TempDir()
	code, _, stderr := runCLI(t, "run", "../../examples/registry", "--example-sites", "--intent", "weather-high-oslo",
		"--pairs", "4", "--spend-cap", "0.5", "--budget-usd", "1", "--run-id", "b1", "--runs-dir", runs,
		"--tools", "../../tools/node_modules")
	assert.Equal(t, exitFailure, code)
	assert.Contains(t, stderr, "smoke gate: budget: 8 trials at up to $0.50 each may spend $4.00, over the $1.00 budget")
	assert.NoFileExists(t, filepath.Join(runs, "b1", "run.json"), "a run stopped by the smoke gate freezes no plan")
}

// TestDefaultRunIDsNeverCollide finishes the flags of two runs started in
// the same second: each gets a run id of its own, so the second never
// resumes the first.
func TestDefaultRunIDsNeverCollide(t *testing.T) {
	seen := map[string]bool{}
	for range 50 {
		o := defaultBenchOptions()
		require.NoError(t, o.finish(""))
		assert.Regexp(t, `^\d{8}-\d{6}-[A-Za-z0-9]{6}$`, o.RunID)
		assert.False(t, seen[o.RunID], "run id %s given twice", o.RunID)
		seen[o.RunID] = true
	}
}
