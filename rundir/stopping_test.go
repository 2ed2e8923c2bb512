package rundir

import (
	"encoding/json"
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

// TestCurtailingPlanStopsWhenNoClaimIsWithinReach: a plan of one intent at
// 6 pairs takes looks at 2 and 4 pairs, blind and kept for curtailment
// alone (no conditional-power bound there), the last at the whole α. When
// its first 2 pairs are both correct with treatment faster in one and
// slower in the other, no label is within reach at 4 or 6 pairs, and the
// run stops at the first look for futility, saying so; run.json records
// the design (curtail), and a run.json without it, planned before, goes on
// to its next look as it did.
func TestCurtailingPlanStopsWhenNoClaimIsWithinReach(t *testing.T) {
	p := looksPlan(1, 6)
	require.Equal(t, []int{2, 4, 6}, p.Looks)
	p.Curtail = true
	require.NoError(t, p.Validate())
	b, err := json.Marshal(p)
	require.NoError(t, err)
	assert.Contains(t, string(b), `"curtail":true`)
	d := p.Design()
	require.NotNil(t, d)
	assert.True(t, d.Curtail)
	assert.Equal(t, []bool{true, true, false}, d.CurtailOnly, "too few pairs for conditional power at 2 and 4")
	assert.InDelta(t, 0.05, d.LookAlpha(0.05, 2), 1e-15, "the blind looks spend nothing")
	at := p.StatsPlanAt(0)
	require.Len(t, at.Later, 2)
	assert.Equal(t, 4, at.Later[0].Pairs["i0"])
	assert.Equal(t, 6, at.Later[1].Pairs["i0"])
	assert.InDelta(t, 0.05, at.Later[1].Alpha, 1e-15)
	assert.Nil(t, p.StatsPlan().Later, "the run's report decides no look")

	// rows: pair i both correct, control taking ratio[i] times treatment's 60 s.
	rowsOf := func(ratio ...float64) []pairbench.Row {
		var rows []pairbench.Row
		for pair, r := range ratio {
			for _, arm := range []pairbench.Arm{pairbench.Control, pairbench.Treatment} {
				wall := 60.0
				if arm == pairbench.Control {
					wall *= r
				}
				rows = append(rows, pairbench.Row{V: pairbench.RowVersion, RunID: "r1", Intent: "i0", Domain: "d.example",
					Stage: pairbench.StagePair, Pair: pair, Order: p.Intents[0].Pairs[pair].Order, Arm: arm, Attempt: 1,
					Outcome: pairbench.Correct, WallSeconds: wall, Turns: 3, Adopted: arm == pairbench.Treatment})
			}
		}
		return rows
	}
	decide := func(p *Plan, rows []pairbench.Row) *LookStop {
		l := NewLooker(p)
		for i := range rows {
			l.Add(&rows[i])
		}
		return l.Decide()
	}
	stop := decide(p, rowsOf(2, 0.5))
	require.NotNil(t, stop)
	assert.Equal(t, 1, stop.Look)
	assert.Equal(t, report.StopFutility, stop.Kind)
	assert.Contains(t, stop.Reason, "no claim can be reached at a later look")
	assert.False(t, stop.Claimed)
	assert.Nil(t, decide(p, rowsOf(2, 1.5)), "6 of 6 pairs faster would still be a label: the run goes on")

	before := *p
	before.Curtail = false
	assert.Nil(t, before.Design().CurtailOnly)
	if stop := decide(&before, rowsOf(2, 0.5)); stop != nil {
		assert.NotContains(t, stop.Reason, "no claim can be reached", "planned before curtailment: its looks are decided as they were")
	}
}

// TestFutilityOnlyPlanDecidesItsLastLookAtAlpha: a plan recorded with
// futility-only looks (a low-powered plan, stats.Design.ForPlan) marks
// every look before its last blind, decides the last at the whole α and
// its earlier looks at the bounds of its futility_power; the same looks
// in a run.json without futility_only spend α as they did.
func TestFutilityOnlyPlanDecidesItsLastLookAtAlpha(t *testing.T) {
	d := stats.DefaultDesign().ForPlan(1, 15, 0.05)
	require.True(t, d.FutilityOnly)
	p := looksPlan(1, 15)
	require.Equal(t, []int{5, 10, 15}, p.Looks)
	p.FutilityPower, p.Curtail, p.FutilityOnly = d.FutilityPower, d.Curtail, d.FutilityOnly
	require.NoError(t, p.Validate())
	b, err := json.Marshal(p)
	require.NoError(t, err)
	assert.Contains(t, string(b), `"futility_only":true`)
	dd := p.Design()
	assert.Equal(t, []bool{true, true, false}, dd.Blind)
	assert.Equal(t, 0.05, p.StatsPlan().Alpha, "the last look decides at the whole α")
	// At two thirds, with the last look's c = z₀.₉₇₅ and one intent's
	// γ = 0.5: a = (1.96·⅔ − 0.8416·⅓ − 0)/√⅔ = 1.257, p 0.209.
	assert.InDelta(t, 0.209, dd.FutilityAt(0.05, 1), 0.001)

	// The looks before the last claim nothing: their report decides at
	// half the smallest p their pairs can give, and ten pairs all faster
	// (p 0.002, below the 0.0164 the look would spend in the design as it
	// is) do not stop the run for efficacy at the look at 10 pairs.
	assert.Equal(t, stats.MinSignP(10)/2, p.StatsPlanAt(1).Alpha)
	assert.True(t, p.StatsPlanAt(1).Looks.Blind, "the report says the look spends no α")
	assert.False(t, p.StatsPlanAt(2).Looks.Blind)
	var rows []pairbench.Row
	for pair := range 10 {
		for _, arm := range []pairbench.Arm{pairbench.Control, pairbench.Treatment} {
			wall := 60.0 + float64(pair)
			if arm == pairbench.Control {
				wall *= 2
			}
			rows = append(rows, pairbench.Row{V: pairbench.RowVersion, RunID: "r1", Intent: "i0", Domain: "d.example",
				Stage: pairbench.StagePair, Pair: pair, Order: p.Intents[0].Pairs[pair].Order, Arm: arm, Attempt: 1,
				Outcome: pairbench.Correct, WallSeconds: wall, Turns: 3, Adopted: arm == pairbench.Treatment})
		}
	}
	l := NewLooker(p)
	for i := range rows {
		l.Add(&rows[i])
	}
	assert.Nil(t, l.Decide(), "futility-only looks never stop for efficacy")
	assert.Equal(t, 0.05-stats.Spent(0.05, 10.0/15), before10(t).StatsPlanAt(2).Alpha, "the design as it is would have spent at 10 pairs")

	more, err := p.TopUp(30)
	require.NoError(t, err)
	assert.True(t, more.FutilityOnly && more.Curtail, "a top-up keeps the design the run was planned with")
	assert.Equal(t, []bool{true, true, true, false}, more.Design().Blind)
	assert.Equal(t, 0.05, more.StatsPlan().Alpha)

	before := looksPlan(1, 15)
	assert.Equal(t, []bool{true, false, false}, before.Design().Blind, "planned before: the look at 10 pairs spends α")
	assert.InDelta(t, 0.05-stats.Spent(0.05, 10.0/15), before.StatsPlan().Alpha, 1e-12)

	one := *p
	one.Looks, one.Intents = nil, nil
	one.FutilityPower, one.Curtail = 0, false
	assert.ErrorContains(t, one.checkLooks(), "a run of one look has none")
}

// before10 is a plan of one intent at 15 pairs as planned before
// futility-only looks, the look at 10 pairs spending α.
func before10(t *testing.T) *Plan {
	t.Helper()
	p := looksPlan(1, 15)
	require.Equal(t, []int{5, 10, 15}, p.Looks)
	return p
}
