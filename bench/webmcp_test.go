package bench_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/bench"
	"github.com/pairbench/pairbench/intents"
	"github.com/pairbench/pairbench/internal/realstack"
	"github.com/pairbench/pairbench/runner"
)

// TestResumeWithAnotherWebMCPIsRefused: every trial of a run goes through
// one WebMCP. A resume naming another --webmcp is refused, even with
// Force, and run.json stays as it was; one naming none resumes the run in
// its own mode.
func TestResumeWithAnotherWebMCPIsRefused(t *testing.T) {
	realstack.Need(t, realstack.NodeTools, realstack.Chromium) // the agents' installs are checked before the plan
	cfg := config(t, "../examples/registry")
	cfg.Intents = []string{"weather-high-oslo"}
	reg, err := intents.Load(cfg.Registry)
	require.NoError(t, err)
	m, err := bench.ParseModel(cfg.Model, "")
	require.NoError(t, err)
	plan, _, err := runner.NewPlan(reg, runner.PlanOptions{RunID: cfg.RunID, Intents: cfg.Intents, Pairs: cfg.Pairs, Model: m,
		Caps: cfg.Caps, Seed: cfg.Seed, Alpha: cfg.Alpha, Now: time.Now(), WebMCP: pairbench.WebMCPNative})
	require.NoError(t, err)
	dir := runner.RunDir{Path: filepath.Join(cfg.RunsDir, cfg.RunID)}
	require.NoError(t, os.MkdirAll(dir.Path, 0o755))
	require.NoError(t, dir.WritePlan(plan))

	for _, force := range []bool{false, true} {
		cfg.Browser.WebMCP, cfg.Force = pairbench.WebMCPPolyfill, force
		_, err := bench.Open(t.Context(), cfg)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "run r1 is benched with --webmcp native, not polyfill; resume it with --webmcp native (or without --webmcp)")
	}
	after, err := dir.ReadPlan()
	require.NoError(t, err)
	assert.Equal(t, pairbench.WebMCPNative, after.WebMCP, "run.json is as it was")

	cfg.Browser.WebMCP, cfg.Force = "", true // the versions differ from the stored plan's: forced past
	r, err := bench.Open(t.Context(), cfg)
	require.NoError(t, err, "a resume without --webmcp keeps the run's")
	require.NoError(t, r.Close())
}

// TestOpenRefusesAnUnknownWebMCPMode: a mode that is neither is one line,
// before anything of the run is made.
func TestOpenRefusesAnUnknownWebMCPMode(t *testing.T) {
	cfg := config(t, "../examples/registry")
	cfg.Browser.WebMCP = "builtin"
	_, err := bench.Open(t.Context(), cfg)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `--webmcp "builtin": want polyfill (the default) or native`)
	assert.NoDirExists(t, filepath.Join(cfg.RunsDir, cfg.RunID))
}
