package main

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench/internal/clitest"
	"github.com/pairbench/pairbench/report"
	"github.com/pairbench/pairbench/rundir"
)

// TestRunStopsAtALookAndRefusesATopUp runs the demo's intents for real at 7
// pairs, taking looks at 3, 5 and 7 pairs: two benched intents at 7 pairs
// find a 1.5× speedup less than 80% of the time, so the plan's looks
// before the last are futility-only (blind: they may stop the run for
// futility alone, spending no α) and the last decides at the whole α
// (stats.Design.ForPlan). The scripted model makes the books intents much faster
// with their tools, so a look stops the run for efficacy: run.json records
// it, no pair past it ran, the report and the final table say where and
// why, and the run is complete. A top-up is then refused with exit 2 (the
// run claimed), and a plain resume runs nothing.
func TestRunStopsAtALookAndRefusesATopUp(t *testing.T) {
	tools := clitest.RealStack(t)
	runs := t.TempDir()
	args := func(more ...string) []string {
		return append([]string{"run", exampleRegistry, "--example-sites", "--intent", "books-cheapest-by-author", "--intent", "books-count-by-author",
			"--intent", "weather-high-oslo", "--start-delay", "0", "--run-id", "l1", "--runs-dir", runs, "--tools", tools, "--seed", "7"}, more...)
	}
	dir := filepath.Join(runs, "l1")
	code, stdout, stderr := runCLI(t, args("--pairs", "7")...)
	require.Equal(t, exitOK, code, stderr)

	plan, err := rundir.ReadPlan(filepath.Join(dir, "run.json"))
	require.NoError(t, err)
	assert.Equal(t, []int{3, 5, 7}, plan.Looks)
	require.NotNil(t, plan.Design())
	assert.True(t, plan.FutilityOnly)
	assert.Equal(t, []bool{true, true, false}, plan.Design().Blind, "the looks before the last are futility-only")
	require.NotNil(t, plan.Stop, "the run stopped at a look: %s", stdout)
	assert.Equal(t, report.StopEfficacy, plan.Stop.Kind)
	rows := clitest.CheckCompleteRun(t, dir)
	for _, r := range rows {
		assert.Less(t, r.Pair, plan.Stop.Pairs, "no pair past the look ran")
	}
	rep := clitest.ReadReport(t, dir)
	assert.Nil(t, rep.Incomplete)
	require.NotNil(t, rep.Looks)
	assert.Equal(t, plan.Stop.Look, rep.Looks.Look)
	assert.Contains(t, stdout, "stopped at look ")
	assert.Contains(t, stdout, "efficacy ("+string(rep.Verdict)+")")

	code, _, stderr = runCLI(t, args("--pairs", "9")...)
	assert.Equal(t, exitUsage, code, stderr)
	assert.Contains(t, stderr, "run l1 claimed a difference (the verdict "+string(rep.Verdict)+")")

	code, _, stderr = runCLI(t, args()...)
	require.Equal(t, exitOK, code, stderr)
	assert.Equal(t, rows, clitest.ReadRows(t, filepath.Join(dir, "rows.jsonl")), "a resume of a stopped run runs nothing")
}
