package bench_test

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/pairbench/pairbench/rundir"

	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/bench"
	"github.com/pairbench/pairbench/report"
)

// TestReportLeavesOutRowsNotOfThePlan: rows no runner of the plan could have
// written (a repeated trial with another outcome, a pair beyond the plan, a
// pair run in the other order) change nothing in the report but its count
// of skipped rows, which the rendered report shows.
func TestReportLeavesOutRowsNotOfThePlan(t *testing.T) {
	demo := rundir.RunDir{Path: "../examples/runs/demo"}
	plan, err := demo.ReadPlan()
	require.NoError(t, err)
	var all []pairbench.Row
	_, err = demo.ScanRows(rundir.RowQuery{RunID: plan.RunID}, func(r *pairbench.Row) { all = append(all, *r) })
	require.NoError(t, err)

	// One pair's rows are taken out of the run: the clean run lacks them,
	// and the bad runs add them back as rows that are not trials of the plan.
	var victim pairbench.Key
	for _, r := range all {
		if r.Stage == pairbench.StagePair {
			victim = r.Key()
			break
		}
	}
	var base, taken []pairbench.Row
	for _, r := range all {
		if r.Stage == pairbench.StagePair && r.Key() == victim {
			taken = append(taken, r)
		} else {
			base = append(base, r)
		}
	}
	require.Len(t, taken, 2)
	clean, _, _ := reportOfRows(t, plan, base)
	require.Zero(t, clean.SkippedRows)

	changed := func(rows []pairbench.Row, change func(*pairbench.Row)) []pairbench.Row {
		out := append([]pairbench.Row(nil), rows...)
		for i := range out {
			change(&out[i])
		}
		return out
	}
	var repeat pairbench.Row
	for _, r := range base {
		if r.Stage == pairbench.StagePair && r.Outcome == pairbench.Correct {
			repeat = r
			break
		}
	}
	repeat.Outcome = pairbench.Wrong
	for name, c := range map[string]struct {
		extra []pairbench.Row
		warn  string
	}{
		"a repeated trial with another outcome": {extra: []pairbench.Row{repeat}, warn: "left out 1 rows that repeat a trial"},
		"a pair beyond the plan": {extra: changed(taken, func(r *pairbench.Row) { r.Pair = 99 }),
			warn: "left out 2 rows of pairs the plan does not have"},
		"a pair run in the other order": {extra: changed(taken, func(r *pairbench.Row) {
			r.Order = map[pairbench.Order]pairbench.Order{pairbench.AB: pairbench.BA, pairbench.BA: pairbench.AB}[r.Order]
		}), warn: "left out 2 rows that ran their pair in another order"},
	} {
		t.Run(name, func(t *testing.T) {
			rep, warnings, md := reportOfRows(t, plan, append(append([]pairbench.Row(nil), base...), c.extra...))
			require.Equal(t, len(c.extra), rep.SkippedRows, "every row not of the plan is counted")
			require.Contains(t, warnings, c.warn)
			require.Contains(t, md, fmt.Sprintf("**Skipped rows:** %d row", len(c.extra)))
			rep.SkippedRows = 0
			require.Equal(t, jsonOf(t, clean), jsonOf(t, rep), "a row not of the plan changed the report")
		})
	}
}

// reportOfRows writes plan and rows into a new run directory, reports it
// with bench.WriteReport and returns the report it wrote (report.json,
// and report.md) and its warnings.
func reportOfRows(t *testing.T, plan *rundir.Plan, rows []pairbench.Row) (rep *report.Report, warnings, md string) {
	t.Helper()
	dir := rundir.RunDir{Path: t.TempDir()}
	require.NoError(t, dir.WritePlan(plan))
	var data []byte
	for _, r := range rows {
		var err error
		data, err = pairbench.AppendRow(data, r)
		require.NoError(t, err)
	}
	require.NoError(t, os.WriteFile(dir.File(rundir.RowsFile), data, 0o644))
	var told []string
	reported, err := bench.WriteReport(dir, dir, "")
	require.NoError(t, err)
	for _, p := range reported.Warnings {
		told = append(told, p.String())
	}
	rep, err = dir.ReadReport()
	require.NoError(t, err)
	b, err := os.ReadFile(dir.File(rundir.ReportMarkdown))
	require.NoError(t, err)
	return rep, strings.Join(told, "\n"), string(b)
}

func jsonOf(t *testing.T, rep *report.Report) string {
	t.Helper()
	var b strings.Builder
	require.NoError(t, report.WriteJSON(&b, rep))
	return b.String()
}
