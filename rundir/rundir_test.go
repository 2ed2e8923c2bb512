package rundir

import (
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/artifacts"
	"github.com/pairbench/pairbench/report"
)

func TestLockRunIsExclusive(t *testing.T) {
	dir := RunDir{Path: t.TempDir()}
	l, err := dir.Lock()
	require.NoError(t, err)
	_, err = dir.Lock()
	require.ErrorIs(t, err, ErrLocked, "a second holder in this process is refused")

	// Another process is refused too (flock is per open file description).
	cmd := exec.Command("flock", "-n", dir.File(".lock"), "true")
	if _, lerr := exec.LookPath("flock"); lerr == nil {
		assert.Error(t, cmd.Run(), "flock from another process must fail while we hold the lock")
	}
	require.NoError(t, l.Unlock())
	l2, err := dir.Lock()
	require.NoError(t, err, "free again after Unlock")
	require.NoError(t, l2.Unlock())
}

func testRow(i int) pairbench.Row {
	return pairbench.Row{Intent: "x", Stage: pairbench.StagePair, Pair: i, Order: pairbench.AB,
		Arm: pairbench.Control, Attempt: 1, Outcome: pairbench.Correct}
}

func TestRowLogRepairsPartialLine(t *testing.T) {
	dir := RunDir{Path: t.TempDir()}
	path := dir.File(RowsFile)
	l, err := dir.OpenRowLog(0)
	require.NoError(t, err)
	require.NoError(t, l.Append(testRow(0)))
	require.NoError(t, l.Close())

	// A writer killed mid-line leaves a partial row.
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString(`{"v":1,"intent":"x","pa`)
	require.NoError(t, err)
	require.NoError(t, f.Close())

	l, err = dir.OpenRowLog(0)
	require.NoError(t, err)
	require.NoError(t, l.Append(testRow(1)))
	require.NoError(t, l.Close())

	b, err := os.ReadFile(path)
	require.NoError(t, err)
	rows, partial, err := pairbench.ReadRows(strings.NewReader(string(b)))
	require.NoError(t, err)
	assert.Zero(t, partial)
	require.Len(t, rows, 2)
	assert.Equal(t, 1, rows[1].Pair)
}

func TestRowLogConcurrentAppends(t *testing.T) {
	dir := RunDir{Path: t.TempDir()}
	path := dir.File(RowsFile)
	l, err := dir.OpenRowLog(0)
	require.NoError(t, err)
	var wg sync.WaitGroup
	for i := range 40 {
		wg.Go(func() { assert.NoError(t, l.Append(testRow(i))) })
	}
	wg.Wait()
	require.NoError(t, l.Close())
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	rows, _, err := pairbench.ReadRows(f)
	require.NoError(t, err)
	assert.Len(t, rows, 40, "no line interleaved or lost")
}

func TestRowLogOnlyPartial(t *testing.T) {
	dir := RunDir{Path: t.TempDir()}
	path := dir.File(RowsFile)
	require.NoError(t, os.WriteFile(path, []byte(`{"v":1`), 0o644))
	l, err := dir.OpenRowLog(0)
	require.NoError(t, err)
	require.NoError(t, l.Append(testRow(3)))
	require.NoError(t, l.Close())
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, 1, strings.Count(string(b), "\n"))
	assert.True(t, strings.HasPrefix(string(b), `{"v":1,"run_id"`))
}

func TestShardOfIsTheOneRowsFileParser(t *testing.T) {
	for rel, want := range map[string]int{"rows.jsonl": 0, "shards/1/rows.jsonl": 1, "shards/12/rows.jsonl": 12} {
		k, ok := ShardOf(rel)
		assert.True(t, ok, rel)
		assert.Equal(t, want, k, rel)
		assert.Equal(t, rel, RowsFileOf(k), "RowsFileOf inverts ShardOf")
	}
	for _, rel := range []string{"run.json", "shards/0/rows.jsonl", "shards/01/rows.jsonl", "shards/x/rows.jsonl",
		"shards/1/rows.json", "shards/1/2/rows.jsonl", "shards//rows.jsonl", "trials/rows.jsonl", "shards/-1/rows.jsonl"} {
		_, ok := ShardOf(rel)
		assert.False(t, ok, rel)
	}
}

func TestReadRowsReadsEveryRowsFileInShardOrder(t *testing.T) {
	dir := RunDir{Path: t.TempDir()}
	write := func(rel string, rows ...pairbench.Row) {
		var b []byte
		for _, r := range rows {
			var err error
			b, err = pairbench.AppendRow(b, r)
			require.NoError(t, err)
		}
		require.NoError(t, dir.WriteFile(rel, b))
	}
	row := func(run string, pair int) pairbench.Row {
		r := testRow(pair)
		r.RunID = run
		return r
	}
	rows, read, err := readAllRows(dir, RowQuery{RunID: "r1"})
	require.NoError(t, err)
	assert.Empty(t, rows)
	require.Len(t, read.Warnings, 1)
	assert.Equal(t, dir.Path+": has no rows.jsonl yet; reporting a run with no trials", read.Warnings[0].String())

	write("shards/10/rows.jsonl", row("r1", 10))
	write("shards/2/rows.jsonl", row("r1", 2), row("r2", 99))
	write("rows.jsonl", row("r1", 0))
	write("shards/x/rows.jsonl", row("r1", 77)) // not a shard: never read
	f, err := os.OpenFile(dir.File("shards/2/rows.jsonl"), os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString(`{"v":1,"run_id":"r1","pai`)
	require.NoError(t, err)
	require.NoError(t, f.Close())

	files, err := dir.RowsFiles()
	require.NoError(t, err)
	assert.Equal(t, []string{"rows.jsonl", "shards/2/rows.jsonl", "shards/10/rows.jsonl"}, files)
	rows, read, err = readAllRows(dir, RowQuery{RunID: "r1"})
	require.NoError(t, err)
	var pairs []int
	for _, r := range rows {
		pairs = append(pairs, r.Pair)
	}
	assert.Equal(t, []int{0, 2, 10}, pairs, "rows.jsonl first, then the shards by number; another run's row left out")
	var said []string
	for _, p := range read.Warnings {
		said = append(said, p.String())
	}
	assert.Equal(t, []string{
		dir.File("shards/2/rows.jsonl") + ":3: skipped a partial last line (a writer was interrupted or is still appending)",
		dir.Path + `: left out 1 rows whose run_id is not "r1"`,
	}, said)
	assert.Equal(t, 1, read.LeftOut)

	rows, read, err = readAllRows(dir, RowQuery{File: "shards/2/rows.jsonl"})
	require.NoError(t, err)
	assert.Len(t, rows, 2, "one file, every run id's rows")
	assert.Zero(t, read.LeftOut)
	require.Len(t, read.Warnings, 1, "the partial line")
	rows, read, err = readAllRows(dir, RowQuery{File: "shards/404/rows.jsonl"})
	require.NoError(t, err)
	assert.Empty(t, rows, "a missing rows file has no rows")
	assert.Empty(t, read.Warnings)

	require.NoError(t, os.WriteFile(dir.File("shards/10/rows.jsonl"), []byte("{}\n"), 0o644))
	_, _, err = readAllRows(dir, RowQuery{RunID: "r1"})
	assert.ErrorContains(t, err, dir.File("shards/10/rows.jsonl")+":1: unsupported row version 0")
}

func TestReadPlanOfADirectoryThatIsNoRun(t *testing.T) {
	dir := RunDir{Path: t.TempDir()}
	_, err := dir.ReadPlan()
	require.ErrorIs(t, err, os.ErrNotExist)
	assert.Equal(t, dir.Path+" has no run.json, so it is not a run directory (pairbench run writes run.json before its first trial)", err.Error())
}

func TestWriteFileStaysInTheRun(t *testing.T) {
	dir := RunDir{Path: t.TempDir()}
	for _, rel := range []string{"../x", "/etc/x", "", ".", "a/../../x"} {
		assert.Error(t, dir.WriteFile(rel, nil), "%q", rel)
	}
	require.NoError(t, dir.WriteFile("trials/a/0-control/setup.json", []byte("{}")))
	assert.FileExists(t, dir.File("trials/a/0-control/setup.json"))
}

func TestWritePlanFreezesWithoutTheScriptedModelsPort(t *testing.T) {
	dir := RunDir{Path: t.TempDir()}
	plan := testPlan()
	plan.Model.BaseURL = "http://127.0.0.1:41234/v1"
	require.NoError(t, dir.WritePlan(plan))
	got, err := dir.ReadPlan()
	require.NoError(t, err)
	assert.Empty(t, got.Model.BaseURL, "this process's loopback port is not part of the plan")
	assert.Equal(t, "http://127.0.0.1:41234/v1", plan.Model.BaseURL, "the caller's plan is left as it was")
	got.Model.BaseURL = plan.Model.BaseURL
	assert.Equal(t, plan, got)
}

func TestReadStoredReport(t *testing.T) {
	store, err := artifacts.NewLocal(t.TempDir())
	require.NoError(t, err)
	_, err = ReadStoredReport(t.Context(), store, "r1")
	require.ErrorIs(t, err, artifacts.ErrNotExist, "a run that published no report")

	dir := RunDir{Path: t.TempDir()}
	_, err = dir.WriteReport(&report.Report{V: report.ReportVersion, RunID: "r1", Alpha: 0.05}, ReportOptions{})
	require.NoError(t, err)
	require.NoError(t, dir.WriteFile(SiteDir+"/i1.html", []byte("<p>intent</p>")))
	require.NoError(t, dir.WriteFile(SiteDir+"/i1/0.html", []byte("<p>pair</p>")))
	require.NoError(t, dir.WriteFile(SiteDir+"/i1/0.html.tmp", []byte("left by a crash")))
	require.NoError(t, dir.PublishReport(t.Context(), store, "r1"))
	for key, want := range map[string]string{"r1/" + SiteDir + "/i1.html": "<p>intent</p>", "r1/" + SiteDir + "/i1/0.html": "<p>pair</p>"} {
		r, err := store.Get(t.Context(), key)
		require.NoError(t, err, "the report site's pages are published with the report")
		b, _ := io.ReadAll(r)
		r.Close()
		assert.Equal(t, want, string(b))
	}
	_, err = store.Stat(t.Context(), "r1/"+SiteDir+"/i1/0.html.tmp")
	assert.ErrorIs(t, err, artifacts.ErrNotExist, "only pages")
	rep, err := ReadStoredReport(t.Context(), store, "r1")
	require.NoError(t, err)
	assert.Equal(t, "r1", rep.RunID)
	local, err := dir.ReadReport()
	require.NoError(t, err)
	assert.Equal(t, rep, local, "the published report is the one on disk")
}
