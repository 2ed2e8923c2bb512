package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench"
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
