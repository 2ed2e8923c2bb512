package main

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// allowInconclusive adds --allow-inconclusive to a `pairbench run` the
// tests start, unless they say otherwise: most bench one intent with a pair
// or two, which tests the harness, not the statistics, and which run
// refuses by default (docs/statistics.md, Planning).
func allowInconclusive(args []string) []string {
	if len(args) == 0 || args[0] != "run" || slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--allow-inconclusive") }) {
		return args
	}
	return append(slices.Clone(args), "--allow-inconclusive")
}

// TestRunRefusesAPlanThatCanReachNoLabel: one intent of three pairs can
// never reach α (2·½³ = 0.25), so run refuses it before anything runs,
// with exit 2 and the pairs it needs.
func TestRunRefusesAPlanThatCanReachNoLabel(t *testing.T) {
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
