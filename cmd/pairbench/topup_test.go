package main

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench/runner"
	"github.com/pairbench/pairbench/stats"
)

// TestTopUpResume runs a real one-pair bench, then resumes it with --pairs
// 2: only the new pair runs, the first pair's rows stay as they were, and
// the report counts both, at the last look's share of α. A resume without
// --pairs keeps the run's pairs; one with fewer is refused, saying why.
func TestTopUpResume(t *testing.T) {
	tools := needRealStack(t)
	runs := t.TempDir()
	args := func(more ...string) []string {
		return append([]string{"run", "../../examples/registry", "--example-sites", "--intent", "weather-high-oslo",
			"--start-delay", "0", "--run-id", "t1", "--runs-dir", runs, "--tools", tools, "--seed", "7"}, more...)
	}
	dir := filepath.Join(runs, "t1")
	code, _, stderr := runCLI(t, args("--pairs", "1")...)
	require.Equal(t, exitOK, code, stderr)
	first := readRows(t, filepath.Join(dir, "rows.jsonl"))

	code, _, stderr = runCLI(t, args("--pairs", "2")...)
	require.Equal(t, exitOK, code, stderr)
	rows := checkCompleteRun(t, dir)
	assert.Equal(t, first, rows[:len(first)], "the first pair did not run again")
	for _, r := range rows[len(first):] {
		assert.Equal(t, 1, r.Pair, "only the new pair ran")
	}
	plan, err := runner.ReadPlan(filepath.Join(dir, "run.json"))
	require.NoError(t, err)
	assert.Equal(t, []int{1, 2}, plan.Looks)
	rep, err := runner.RunDir{Path: dir}.ReadReport()
	require.NoError(t, err)
	require.Len(t, rep.Intents, 1)
	assert.Equal(t, 2, rep.Intents[0].Pairs.Planned)
	assert.Equal(t, 2, rep.Intents[0].Pairs.Complete, "the report counts both pairs")
	assert.InDelta(t, 0.05-stats.Spent(0.05, 0.5), rep.Alpha, 1e-12)

	code, _, stderr = runCLI(t, args()...)
	require.Equal(t, exitOK, code, "without --pairs a resume keeps the run's pairs: %s", stderr)
	assert.Equal(t, rows, readRows(t, filepath.Join(dir, "rows.jsonl")), "a finished run resumes to nothing")

	code, _, stderr = runCLI(t, args("--pairs", "1")...)
	assert.Equal(t, exitFailure, code)
	assert.Contains(t, stderr, "run t1 plans 2 pairs per intent and a resume cannot drop planned pairs; resume with --pairs 2, or more to top it up")
}
