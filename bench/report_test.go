package bench_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"

	"github.com/pairbench/pairbench/rundir"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/artifacts"
	"github.com/pairbench/pairbench/bench"
	"github.com/pairbench/pairbench/report"
	"github.com/pairbench/pairbench/viewer"
)

// TestReportSkipsOnlyUnreadFields: the report reads the rows skipping what
// report.Builder.Unread names; built from whole rows instead, every number is
// the same. The example run has agreement checks (whose answers must be
// read) and, with them taken out of the plan, none (the answers skipped).
func TestReportSkipsOnlyUnreadFields(t *testing.T) {
	dir := rundir.RunDir{Path: "../examples/runs/demo"}
	plan, err := dir.ReadPlan()
	require.NoError(t, err)
	noAgreement := *plan
	noAgreement.Intents = nil
	for _, in := range plan.Intents {
		in.Agreement = nil
		noAgreement.Intents = append(noAgreement.Intents, in)
	}
	for name, p := range map[string]*rundir.Plan{"agreement checks": plan, "no agreement check": &noAgreement} {
		reportJSON := func(skip func(*report.Builder) pairbench.RowFields) []byte {
			b := report.NewBuilder(p.StatsPlan())
			_, err := dir.ScanRows(rundir.RowQuery{RunID: p.RunID, Skip: skip(b)}, b.Add)
			require.NoError(t, err)
			var out bytes.Buffer
			require.NoError(t, report.WriteJSON(&out, b.Report()))
			return out.Bytes()
		}
		whole := reportJSON(func(*report.Builder) pairbench.RowFields { return 0 })
		skipped := reportJSON((*report.Builder).Unread)
		require.Equal(t, string(whole), string(skipped), "%s: the report read other fields than Unread says", name)
	}
	b := report.NewBuilder(noAgreement.StatsPlan())
	require.NotZero(t, b.Unread()&pairbench.FieldExtracted, "without agreement checks the answers are skipped")
	b = report.NewBuilder(plan.StatsPlan())
	require.Zero(t, b.Unread()&pairbench.FieldExtracted, "agreement checks read the answers")
}

// TestReportForViewing writes the report and site of a run that has none,
// leaves a reported run as it is, rewrites it when told, and refuses a
// directory without a plan.
func TestReportForViewing(t *testing.T) {
	_, err := bench.ReportForViewing(rundir.RunDir{Path: t.TempDir()}, false)
	require.ErrorContains(t, err, "not a run")

	run := rundir.RunDir{Path: t.TempDir()}
	for _, f := range []string{rundir.PlanFile, rundir.RowsFile} {
		b, err := os.ReadFile(filepath.Join("../examples/runs/demo", f))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(run.File(f), b, 0o644))
	}
	warnings, err := bench.ReportForViewing(run, false)
	require.NoError(t, err)
	assert.Empty(t, warnings)
	require.FileExists(t, run.File(rundir.ReportHTML))
	require.DirExists(t, run.File(viewer.IntentsDir))

	mark := []byte("left as it was")
	require.NoError(t, os.WriteFile(run.File(rundir.ReportHTML), mark, 0o644))
	_, err = bench.ReportForViewing(run, false)
	require.NoError(t, err)
	html, err := os.ReadFile(run.File(rundir.ReportHTML))
	require.NoError(t, err)
	require.Equal(t, mark, html, "a reported run is served as it is")

	// A rows file cut short, as a killed runner leaves it: the report is
	// written, and the cut line comes back as a warning.
	f, err := os.OpenFile(run.File(rundir.RowsFile), os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString(`{"v":1,"run_id":"de`)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	warnings, err = bench.ReportForViewing(run, true)
	require.NoError(t, err)
	assert.Len(t, warnings, 1, "the partial last line")
	html, err = os.ReadFile(run.File(rundir.ReportHTML))
	require.NoError(t, err)
	require.NotEqual(t, mark, html, "rewrite writes the report again")
}

// TestFetchForViewing fetches a stored run without a report into a
// directory of its own, reports it there, and removes it when told; a run
// the store does not hold leaves nothing behind.
func TestFetchForViewing(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	storeDir := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(storeDir, "demo"), 0o755))
	for _, f := range []string{rundir.PlanFile, rundir.RowsFile} {
		b, err := os.ReadFile(filepath.Join("../examples/runs/demo", f))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(storeDir, "demo", f), b, 0o644))
	}
	store, err := artifacts.NewLocal(storeDir)
	require.NoError(t, err)

	run, remove, warnings, err := bench.FetchForViewing(context.Background(), store, "demo")
	require.NoError(t, err)
	assert.Empty(t, warnings)
	require.FileExists(t, run.File(rundir.ReportHTML))
	require.DirExists(t, run.File(viewer.IntentsDir))
	remove()
	require.NoDirExists(t, run.Path)

	_, _, _, err = bench.FetchForViewing(context.Background(), store, "missing")
	require.Error(t, err)
	left, err := os.ReadDir(os.Getenv("TMPDIR"))
	require.NoError(t, err)
	require.Empty(t, left, "a failed fetch leaves no directory")
}

// TestHoldReportMemory sets Go's soft memory limit for a report and
// restores it after, unless GOMEMLIMIT is set.
func TestHoldReportMemory(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	t.Setenv("GOMEMLIMIT", "")
	require.NoError(t, os.Unsetenv("GOMEMLIMIT"))
	restore := bench.HoldReportMemory()
	require.Equal(t, int64(bench.ReportMemoryLimit), debug.SetMemoryLimit(-1))
	restore()
	require.Equal(t, before, debug.SetMemoryLimit(-1))

	t.Setenv("GOMEMLIMIT", "1GiB")
	restore = bench.HoldReportMemory()
	require.Equal(t, before, debug.SetMemoryLimit(-1), "the operator's GOMEMLIMIT wins")
	restore()
	require.Equal(t, before, debug.SetMemoryLimit(-1))
}

// TestReadVerdict reads a finished run's report, refuses one whose pairs
// are not all run, and says how to write a missing one.
func TestReadVerdict(t *testing.T) {
	rep, err := bench.ReadVerdict(rundir.RunDir{Path: "../examples/runs/demo"})
	require.NoError(t, err)
	require.Equal(t, "demo", rep.RunID)

	_, err = bench.ReadVerdict(rundir.RunDir{Path: t.TempDir()})
	require.ErrorContains(t, err, "run `pairbench report")

	run := rundir.RunDir{Path: t.TempDir()}
	plan, err := os.ReadFile("../examples/runs/demo/run.json")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(run.File(rundir.PlanFile), plan, 0o644))
	_, err = bench.WriteReport(run, run, "")
	require.NoError(t, err)
	_, err = bench.ReadVerdict(run)
	var incomplete *bench.IncompleteError
	require.ErrorAs(t, err, &incomplete, "a run without rows is no verdict")
	require.Equal(t, "demo", incomplete.RunID)
	require.Positive(t, incomplete.Pending)
}
