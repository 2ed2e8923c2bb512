package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench/internal/clitest"
	"github.com/pairbench/pairbench/report"
	"github.com/pairbench/pairbench/rundir"
	"github.com/pairbench/pairbench/stats"
)

// TestTopUpResume runs a real one-pair bench, then resumes it with --pairs
// 2: only the new pair runs, the first pair's rows stay as they were, and
// the report counts both, at the last look's share of α, and the store
// holds the topped-up plan, so a fresh runner resumes from it. A resume
// without --pairs keeps the run's pairs; one with fewer is refused, saying
// why.
func TestTopUpResume(t *testing.T) {
	tools := clitest.RealStack(t)
	runs, store := t.TempDir(), t.TempDir()
	args := func(more ...string) []string {
		return append([]string{"run", "../../examples/registry", "--example-sites", "--intent", "weather-high-oslo",
			"--start-delay", "0", "--run-id", "t1", "--runs-dir", runs, "--store", store, "--tools", tools, "--seed", "7"}, more...)
	}
	dir := filepath.Join(runs, "t1")
	code, _, stderr := runCLI(t, args("--pairs", "1")...)
	require.Equal(t, exitOK, code, stderr)
	first := clitest.ReadRows(t, filepath.Join(dir, "rows.jsonl"))

	code, _, stderr = runCLI(t, args("--pairs", "2")...)
	require.Equal(t, exitOK, code, stderr)
	rows := clitest.CheckCompleteRun(t, dir)
	assert.Equal(t, first, rows[:len(first)], "the first pair did not run again")
	for _, r := range rows[len(first):] {
		assert.Equal(t, 1, r.Pair, "only the new pair ran")
	}
	plan, err := rundir.ReadPlan(filepath.Join(dir, "run.json"))
	require.NoError(t, err)
	assert.Equal(t, []int{1, 2}, plan.Looks)
	rep, err := rundir.RunDir{Path: dir}.ReadReport()
	require.NoError(t, err)
	require.Len(t, rep.Intents, 1)
	assert.Equal(t, 2, rep.Intents[0].Pairs.Planned)
	assert.Equal(t, 2, rep.Intents[0].Pairs.Complete, "the report counts both pairs")
	assert.InDelta(t, 0.05-stats.Spent(0.05, 0.5), rep.Alpha, 1e-12)
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	require.NoError(t, err)
	assert.Contains(t, string(md), "Look 2 of 2 (1, then 2 pairs per intent): the run went on through its looks, claiming no difference before this one (a run topped up with more pairs included); this look is decided at α 0.0444")
	require.NotNil(t, plan.Stop, "the runner took the last look")
	assert.Equal(t, report.StopComplete, plan.Stop.Kind)
	assert.Equal(t, 1, plan.Passed, "the look the one-pair run ended at was passed")

	local, err := os.ReadFile(filepath.Join(dir, "run.json"))
	require.NoError(t, err)
	stored, err := os.ReadFile(filepath.Join(store, "t1", "run.json"))
	require.NoError(t, err)
	assert.Equal(t, string(local), string(stored), "the store holds the topped-up plan")

	code, _, stderr = runCLI(t, args()...)
	require.Equal(t, exitOK, code, "without --pairs a resume keeps the run's pairs: %s", stderr)
	assert.Equal(t, rows, clitest.ReadRows(t, filepath.Join(dir, "rows.jsonl")), "a finished run resumes to nothing")

	fresh := args()
	fresh[slices.Index(fresh, runs)] = t.TempDir()
	code, _, stderr = runCLI(t, fresh...)
	require.Equal(t, exitOK, code, "a fresh runner resumes the topped-up run from the store: %s", stderr)
	assert.Contains(t, stderr, fmt.Sprintf("took %d rows from the store", len(rows)))

	code, _, stderr = runCLI(t, args("--pairs", "1")...)
	assert.Equal(t, exitFailure, code)
	assert.Contains(t, stderr, "run t1 plans 2 pairs per intent and a resume cannot drop planned pairs; resume with --pairs 2, or more to top it up")
}
