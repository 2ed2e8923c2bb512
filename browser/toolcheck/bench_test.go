package toolcheck

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/browser/local"
	"github.com/pairbench/pairbench/examples/site"
	"github.com/pairbench/pairbench/intents"
	"github.com/pairbench/pairbench/internal/sandboxtest"
	"github.com/pairbench/pairbench/rundir"
	"github.com/pairbench/pairbench/runner"
)

// BenchmarkSmokeTreatment compares, side by side, the smoke gate's
// treatment check over the whole example registry (every domain and entry
// tool, Treatment) with what the gate did before: one treatment setup, of
// the first intent. Report the ratio.
func BenchmarkSmokeTreatment(b *testing.B) {
	srv := httptest.NewServer(site.New())
	defer srv.Close()
	hosts := map[string]string{}
	for _, h := range site.Hosts() {
		hosts[h] = strings.TrimPrefix(srv.URL, "http://")
	}
	browsers, err := local.New(local.Config{Hosts: hosts, TempDir: sandboxtest.TempDir(b), Log: quiet})
	require.NoError(b, err)
	reg, err := intents.Load("../../examples/registry")
	require.NoError(b, err)
	plan, _, err := runner.NewPlan(reg, runner.PlanOptions{RunID: "b", Pairs: 1, Seed: 1, Alpha: 0.05, Now: time.Now(),
		Model: rundir.Model{Provider: "pairbench", ID: "pairbench-scripted", Scripted: true}})
	require.NoError(b, err)
	byID, err := runner.TrialIntents(reg, plan)
	require.NoError(b, err)
	var tis []*runner.TrialIntent
	for _, in := range plan.Intents {
		tis = append(tis, byID[in.ID])
	}
	ctx := context.Background()

	b.Run("first-intent-setup", func(b *testing.B) {
		ti := tis[0]
		for b.Loop() {
			setup, err := runner.SetUpBrowser(ctx, quiet, browsers, runner.SetupSpec{Arm: pairbench.Treatment,
				StartURL: ti.Intent.StartURL, Tools: ti.Tools, EntryTool: ti.Intent.EntryTool})
			require.NoError(b, err)
			require.NoError(b, setup.Browser.Close(ctx))
		}
	})
	b.Run("every-intent", func(b *testing.B) {
		for b.Loop() {
			require.NoError(b, Treatment(ctx, quiet, browsers, tis))
		}
	})
}
