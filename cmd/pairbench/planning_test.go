package main

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench/bench"
	"github.com/pairbench/pairbench/internal/realstack"
	"github.com/pairbench/pairbench/rundir"
	"github.com/pairbench/pairbench/stats"
)

// TestRunRefusesAPlanThatCanReachNoLabel: one intent of three pairs can
// never reach α (2·½³ = 0.25), so run refuses it before anything runs,
// with exit 2 and the pairs it needs.
func TestRunRefusesAPlanThatCanReachNoLabel(t *testing.T) {
	realstack.Need(t, realstack.NodeTools) // run checks the agent is installed before it plans
	runs := t.TempDir()
	code, _, stderr := runCLI(t, "run", "../../examples/registry", "--example-sites", "--intent", "weather-high-oslo", "--pairs", "3",
		"--run-id", "p1", "--runs-dir", runs, "--tools", "../../tools/node_modules", "--allow-inconclusive=false")
	assert.Equal(t, exitUsage, code, stderr)
	assert.Contains(t, stderr, "this plan can reach no label")
	assert.Contains(t, stderr, "at least 6 pairs per intent (--pairs 6, or --pairs auto)")
	assert.NoDirExists(t, filepath.Join(runs, "p1"), "nothing is left behind")
}

// TestPairsFlag: --pairs takes a number of at least 1 or auto; --effect a
// speedup or an accuracy gain.
func TestPairsFlag(t *testing.T) {
	o := defaultBenchOptions()
	v := pairsValue{&o.Config}
	assert.NoError(t, v.Set("auto"))
	assert.True(t, o.PairsAuto)
	assert.Equal(t, "auto", v.String())
	assert.NoError(t, v.Set("12"))
	assert.False(t, o.PairsAuto)
	assert.Equal(t, 12, o.Pairs)
	assert.Error(t, v.Set("0"))
	assert.Error(t, v.Set("many"))
	e := effectValue{&o.Effect}
	assert.NoError(t, e.Set("+20pp"))
	assert.InDelta(t, 0.2, o.Effect.Accuracy, 1e-12)
	assert.Error(t, e.Set("0.5x"))
}

// TestRunPairsAuto: --pairs auto plans the fewest pairs that detect
// --effect (stats.AutoPairs), run.json freezes them, and a resume with
// --pairs auto keeps them; an effect no number of pairs detects is an
// error before anything runs.
func TestRunPairsAuto(t *testing.T) {
	realstack.Need(t, realstack.NodeTools) // run checks the agent is installed before it plans
	runs := t.TempDir()
	args := []string{"run", "../../examples/registry", "--example-sites", "--intent", "books-count-by-author,books-cheapest-by-author",
		"--pairs", "auto", "--effect", "2x", "--start-delay", "0", "--run-id", "a1", "--runs-dir", runs,
		"--tools", "../../tools/node_modules", "--plan-only", "--allow-inconclusive=false"}
	code, _, stderr := runCLI(t, args...)
	require.Equal(t, exitOK, code, stderr)
	plan, err := rundir.ReadPlan(filepath.Join(runs, "a1", "run.json"))
	require.NoError(t, err)
	// The default design's looks: the run is decided at its last look's
	// share of α.
	design := bench.DefaultConfig().Design()
	want, err := stats.AutoPairsAt(2, func(n int) float64 { return rundir.LastLookAlpha(design, n, 2, 0.05) }, stats.Effect{Speedup: 2})
	require.NoError(t, err)
	for _, in := range plan.Intents {
		assert.Len(t, in.Pairs, want, in.ID)
	}
	code, _, stderr = runCLI(t, args...)
	assert.Equal(t, exitOK, code, "a resume with --pairs auto keeps the pairs it picked: %s", stderr)

	code, _, stderr = runCLI(t, "run", "../../examples/registry", "--example-sites", "--intent", "books-count-by-author",
		"--pairs", "auto", "--effect", "1.001x", "--run-id", "a2", "--runs-dir", runs, "--tools", "../../tools/node_modules")
	assert.NotEqual(t, exitOK, code)
	assert.Contains(t, stderr, "--pairs auto: detect 1.001× over 1 intent: no number of pairs up to 1,000 per intent detects it")
}

// TestPlaceboRunIsPlannedWithoutLooks: a run of a placebo intent alone
// takes no looks, so what it can reach is checked at α itself, not at the
// share a last look would leave it.
func TestPlaceboRunIsPlannedWithoutLooks(t *testing.T) {
	realstack.Need(t, realstack.NodeTools) // run checks the agent is installed before it plans
	runs := t.TempDir()
	code, _, stderr := runCLI(t, "run", "../../examples/registry", "--example-sites", "--intent", "weather-high-oslo", "--pairs", "30",
		"--plan-only", "--run-id", "p2", "--runs-dir", runs, "--tools", "../../tools/node_modules")
	require.Equal(t, exitOK, code, stderr)
	plan, err := rundir.ReadPlan(filepath.Join(runs, "p2", "run.json"))
	require.NoError(t, err)
	assert.Empty(t, plan.Looks)
	assert.Contains(t, stderr, "labels attainable at 0.05 over 30 pairs")
}
