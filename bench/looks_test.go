package bench_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/artifacts"
	"github.com/pairbench/pairbench/bench"
	"github.com/pairbench/pairbench/report"
	"github.com/pairbench/pairbench/rundir"
	"github.com/pairbench/pairbench/runner"
	"github.com/pairbench/pairbench/stats"
)

// TestStoppedRunIsFinalAndPublished: a run that stopped at its first look
// (three intents of 30 pairs, treatment twice as fast) has 60 of its 90
// planned pairs never run, yet its report is final, not incomplete: the
// store's syncer uploads it, report.json last, and ReadVerdict takes it.
func TestStoppedRunIsFinalAndPublished(t *testing.T) {
	d := stats.DefaultDesign()
	plan := &rundir.Plan{V: rundir.PlanVersion, RunID: "r1", Alpha: 0.05, Seed: 1,
		Model: rundir.Model{Provider: "scripted", ID: "pairbench-scripted", Scripted: true},
		Looks: rundir.LookPairs(&d, 30, 3, 0.05), Futility: d.Futility}
	for i := range 3 {
		in := rundir.PlannedIntent{ID: fmt.Sprintf("intent-%d", i), Domain: "books.example", Class: pairbench.AnswerPinned, Tools: []string{"t"}}
		for n := range 30 {
			in.Pairs = append(in.Pairs, rundir.PlannedPair{Pair: n, Order: [2]pairbench.Order{pairbench.AB, pairbench.BA}[n%2]})
		}
		plan.Intents = append(plan.Intents, in)
	}
	dir := rundir.RunDir{Path: t.TempDir()}
	require.NoError(t, dir.WritePlan(plan))
	trial := func(_ context.Context, s runner.TrialSpec) (pairbench.Row, error) {
		wall := float64(10 + s.Job.Pair%7)
		if s.Arm == pairbench.Control {
			wall *= 2
		}
		return pairbench.Row{V: pairbench.RowVersion, RunID: "r1", Intent: s.Job.Intent, Domain: s.Job.Domain, Stage: s.Job.Stage,
			Pair: s.Job.Pair, Order: s.Job.Order, Arm: s.Arm, Attempt: s.Job.Attempt, TrialDir: s.Dir,
			Outcome: pairbench.Correct, Adopted: s.Arm == pairbench.Treatment, WallSeconds: wall}, nil
	}
	require.NoError(t, (&runner.Execution{Dir: dir, Plan: plan, Slots: 2, Trial: trial}).Run(t.Context()))

	got, err := bench.WriteReport(dir, dir, "")
	require.NoError(t, err)
	assert.True(t, got.Status.Finished(), "%+v", got.Status)
	assert.Equal(t, 30, got.Status.Planned, "the pairs in force")
	rep, err := bench.ReadVerdict(dir)
	require.NoError(t, err, "a verdict, not an incomplete run")
	assert.Equal(t, pairbench.Faster, rep.Verdict)

	store, err := artifacts.NewLocal(t.TempDir())
	require.NoError(t, err)
	s, err := dir.Syncer(store, "r1", 0)
	require.NoError(t, err)
	_, err = s.Sync(t.Context())
	require.NoError(t, err)
	stored, err := rundir.ReadStoredReport(t.Context(), store, "r1")
	require.NoError(t, err, "the final report is published")
	assert.Equal(t, report.StopEfficacy, stored.Looks.Stop)
}
