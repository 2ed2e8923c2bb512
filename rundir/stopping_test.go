package rundir

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/artifacts"
	"github.com/pairbench/pairbench/report"
	"github.com/pairbench/pairbench/stats"
)

// looksPlan is a plan of intents intents of pairs pairs each, taking its
// looks by the default design (a third, two thirds, all; futility where
// conditional power falls below 0.6), as NewPlan plans one.
func looksPlan(intents, pairs int) *Plan {
	d := stats.DefaultDesign()
	p := &Plan{V: PlanVersion, RunID: "r1", Alpha: 0.05, Seed: 7, Model: Model{Provider: "scripted", ID: "m"},
		Looks: LookPairs(&d, pairs, intents, 0.05), FutilityPower: d.FutilityPower}
	rng := rand.New(rand.NewPCG(7, 0))
	for i := range intents {
		p.Intents = append(p.Intents, PlannedIntent{ID: fmt.Sprintf("i%d", i), Domain: "d.example", Class: "pinned",
			Pairs: LookOrders(p.Looks, pairs, rng)})
	}
	return p
}

// TestReconcileKeepsTheRecordedStop: a run.json that records the stop and
// one that does not yet (its upload failed after the stop) are one run's
// plan, whichever side holds which: the directory ends with the stop. Two
// different stops, or a stop beside another plan, are still two runs.
func TestReconcileKeepsTheRecordedStop(t *testing.T) {
	open := looksPlan(2, 12)
	stopped := looksPlan(2, 12)
	stopped.Stop = &LookStop{Look: 1, Pairs: 4, Kind: report.StopFutility, Verdict: pairbench.NoSignal, Reason: "why"}
	for _, c := range []struct {
		name          string
		local, stored *Plan
	}{{"stored stop", open, stopped}, {"local stop", stopped, open}} {
		t.Run(c.name, func(t *testing.T) {
			store, err := artifacts.NewLocal(t.TempDir())
			require.NoError(t, err)
			storeRun(t, store, map[string][]byte{PlanFile: planJSON(t, c.stored)})
			dir := RunDir{Path: t.TempDir()}
			require.NoError(t, dir.WritePlan(c.local))
			_, _, err = dir.Reconcile(t.Context(), store, "r1", 0, 0)
			require.NoError(t, err)
			got, err := dir.ReadPlan()
			require.NoError(t, err)
			assert.Equal(t, stopped.Stop, got.Stop)
		})
	}
	other := looksPlan(2, 12)
	other.Stop = &LookStop{Look: 2, Pairs: 8, Kind: report.StopEfficacy, Verdict: pairbench.Faster, Claimed: true}
	changed := looksPlan(2, 12)
	changed.Seed++
	for _, stored := range []*Plan{other, changed} {
		store, err := artifacts.NewLocal(t.TempDir())
		require.NoError(t, err)
		storeRun(t, store, map[string][]byte{PlanFile: planJSON(t, stored)})
		dir := RunDir{Path: t.TempDir()}
		require.NoError(t, dir.WritePlan(stopped))
		_, _, err = dir.Reconcile(t.Context(), store, "r1", 0, 0)
		assert.ErrorContains(t, err, "two different plans")
	}
}
