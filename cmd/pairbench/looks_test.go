package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/artifacts"
	"github.com/pairbench/pairbench/internal/clitest"
	"github.com/pairbench/pairbench/report"
	"github.com/pairbench/pairbench/rundir"
	"github.com/pairbench/pairbench/runner"
	"github.com/pairbench/pairbench/stats"
)

// looksPlan is a run of three intents of 30 pairs that takes its looks
// by the default design: at 10, 20 and 30 pairs per intent.
func looksPlan(t *testing.T) *rundir.Plan {
	t.Helper()
	d := stats.DefaultDesign()
	p := &rundir.Plan{V: rundir.PlanVersion, RunID: "r1", Alpha: 0.05, Seed: 1,
		Model: rundir.Model{Provider: "scripted", ID: "pairbench-scripted", Scripted: true},
		Looks: rundir.LookPairs(&d, 30, 3, 0.05), FutilityPower: d.FutilityPower}
	require.Equal(t, []int{10, 20, 30}, p.Looks)
	for i := range 3 {
		in := rundir.PlannedIntent{ID: fmt.Sprintf("intent-%d", i), Domain: "books.example", Class: pairbench.AnswerPinned, Tools: []string{"t"}}
		for n := range 30 {
			in.Pairs = append(in.Pairs, rundir.PlannedPair{Pair: n, Order: [2]pairbench.Order{pairbench.AB, pairbench.BA}[n%2]})
		}
		p.Intents = append(p.Intents, in)
	}
	return p
}

// twiceAsFast scores every trial correct, treatment twice as fast.
func twiceAsFast(_ context.Context, s runner.TrialSpec) (pairbench.Row, error) {
	wall := float64(10 + s.Job.Pair%7)
	if s.Arm == pairbench.Control {
		wall *= 2
	}
	return pairbench.Row{V: pairbench.RowVersion, RunID: "r1", Intent: s.Job.Intent, Domain: s.Job.Domain, Stage: s.Job.Stage,
		Pair: s.Job.Pair, Order: s.Job.Order, Arm: s.Arm, Attempt: s.Job.Attempt, TrialDir: s.Dir,
		Outcome: pairbench.Correct, Adopted: s.Arm == pairbench.Treatment, WallSeconds: wall}, nil
}

// TestShardedRunOfLooksIsReportedAtItsStop: two shards run their share of
// every look (they cannot see each other's rows); report of the directory
// holding them, and merge from a store, decide the looks from all their
// rows: the run stopped at the first look for efficacy, the report counts
// its 10 pairs per intent alone and is final, merge records the stop in
// the merged run.json, and the two reports are one.
func TestShardedRunOfLooksIsReportedAtItsStop(t *testing.T) {
	plan := looksPlan(t)
	dir := rundir.RunDir{Path: t.TempDir()}
	require.NoError(t, dir.WritePlan(plan))
	for k := 1; k <= 2; k++ {
		ex := &runner.Execution{Dir: dir, Plan: plan, Slots: 2, Shard: k, Shards: 2, Trial: twiceAsFast}
		require.NoError(t, ex.Run(t.Context()))
	}
	rows := 0
	for k := 1; k <= 2; k++ {
		_, err := dir.ScanRows(rundir.RowQuery{File: rundir.RowsFileOf(k)}, func(*pairbench.Row) { rows++ })
		require.NoError(t, err)
	}
	require.Equal(t, 3*30*2, rows, "the shards ran every pair")

	code, _, stderr := runCmd(t, "report", dir.Path)
	require.Equal(t, exitOK, code, stderr)
	rep := clitest.ReadReport(t, dir.Path)
	assert.Nil(t, rep.Incomplete, "a run that stopped is complete")
	assert.Equal(t, pairbench.Faster, rep.Verdict)
	require.NotNil(t, rep.Looks)
	assert.Equal(t, 1, rep.Looks.Look)
	assert.Equal(t, report.StopEfficacy, rep.Looks.Stop)
	assert.InDelta(t, stats.Spent(0.05, 1.0/3), rep.Alpha, 1e-12)
	for _, in := range rep.Intents {
		assert.Equal(t, 10, in.Pairs.Planned, in.ID)
		assert.Equal(t, 10, in.Pairs.Complete, in.ID)
	}
	md, err := os.ReadFile(dir.File(rundir.ReportMarkdown))
	require.NoError(t, err)
	assert.Contains(t, string(md), "Look 1 of 3 (10, then 20, then 30 pairs per intent): the run, every intent with it, stopped here for efficacy")
	html, err := os.ReadFile(dir.File(rundir.ReportHTML))
	require.NoError(t, err)
	assert.Contains(t, string(html), "stopped here for efficacy")

	loc := t.TempDir()
	store, err := artifacts.Open(t.Context(), loc)
	require.NoError(t, err)
	for _, rel := range []string{rundir.PlanFile, rundir.RowsFileOf(1), rundir.RowsFileOf(2)} {
		f, err := os.Open(dir.File(rel))
		require.NoError(t, err)
		require.NoError(t, store.Put(t.Context(), "r1/"+rel, f))
		f.Close()
	}
	out := filepath.Join(t.TempDir(), "merged")
	code, _, stderr = runCmd(t, "merge", "--store", loc, "--run-id", "r1", "--out", out)
	require.Equal(t, exitOK, code, stderr)
	merged, err := rundir.ReadPlan(filepath.Join(out, rundir.PlanFile))
	require.NoError(t, err)
	require.NotNil(t, merged.Stop, "merge records the stop")
	assert.Equal(t, 1, merged.Stop.Look)
	assert.Equal(t, report.StopEfficacy, merged.Stop.Kind)
	code, _, stderr = runCmd(t, "report", out)
	require.Equal(t, exitOK, code, stderr)
	a, err := os.ReadFile(filepath.Join(out, rundir.ReportJSON))
	require.NoError(t, err)
	b, err := os.ReadFile(dir.File(rundir.ReportJSON))
	require.NoError(t, err)
	assert.JSONEq(t, string(b), string(a), "the merged run's report is the directory's")
}

// TestFinalTableSaysWhereTheRunStopped: the table run prints after a run
// of looks names the look each intent stopped at and why. The pooled
// verdict stopped the run at the first look; each intent's own label is
// decided at that look's level too (10 of 10 pairs faster, p 0.002, is
// above it).
func TestFinalTableSaysWhereTheRunStopped(t *testing.T) {
	plan := looksPlan(t)
	dir := rundir.RunDir{Path: t.TempDir()}
	require.NoError(t, dir.WritePlan(plan))
	require.NoError(t, (&runner.Execution{Dir: dir, Plan: plan, Slots: 2, Trial: twiceAsFast}).Run(t.Context()))
	code, _, stderr := runCmd(t, "report", dir.Path)
	require.Equal(t, exitOK, code, stderr)
	var out strings.Builder
	require.NoError(t, printVerdict(&out, dir))
	assert.Contains(t, out.String(), "verdict: faster (run r1)\nstopped at look 1 of 3, 10 of 30 pairs per intent: efficacy (the verdict faster was reached at level 0.000687)\n")
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	assert.Contains(t, lines[2], "stopped")
	for _, l := range lines[3:] {
		assert.Regexp(t, `^intent-\d\s+inconclusive\s+10/10\s.*look 1/3 efficacy \(faster\)$`, l)
	}
}
