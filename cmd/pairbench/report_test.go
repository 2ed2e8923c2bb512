package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/internal/clitest"
	"github.com/pairbench/pairbench/rundir"
)

const demoDir = "../../examples/runs/demo"

// runCmd runs pairbench with args and returns its exit code and output.
func runCmd(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(clitest.AllowInconclusive(args), strings.NewReader(""), &out, &errOut)
	return code, out.String(), errOut.String()
}

// smallRun writes a run directory with one intent of four pairs and
// returns it with its rows.jsonl content.
func smallRun(t *testing.T) (dir string, rows []byte) {
	t.Helper()
	dir = t.TempDir()
	plan := rundir.Plan{
		V: rundir.PlanVersion, RunID: "r1", CreatedAt: time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC),
		Model: rundir.Model{Provider: "scripted", ID: "pairbench-scripted", Scripted: true},
		Seed:  1, Alpha: 0.05,
		Intents: []rundir.PlannedIntent{{ID: "books-cheapest", Domain: "books.example", Class: pairbench.AnswerPinned, Tools: []string{"find_books"}}},
	}
	for pair := range 4 {
		order := pairbench.AB
		if pair%2 == 1 {
			order = pairbench.BA
		}
		plan.Intents[0].Pairs = append(plan.Intents[0].Pairs, rundir.PlannedPair{Pair: pair, Order: order})
		for _, arm := range order.Arms() {
			row := pairbench.Row{
				RunID: "r1", Intent: "books-cheapest", Domain: "books.example", Stage: pairbench.StagePair,
				Pair: pair, Order: order, Arm: arm, Attempt: 1, Outcome: pairbench.Correct, WallSeconds: 30,
				Adopted: arm == pairbench.Treatment,
			}
			if arm == pairbench.Treatment {
				row.WallSeconds = 12
			}
			var err error
			rows, err = pairbench.AppendRow(rows, row)
			require.NoError(t, err)
		}
	}
	b, err := json.Marshal(plan)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "run.json"), b, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "rows.jsonl"), rows, 0o644))
	return dir, rows
}

func TestReportWritesThreeFiles(t *testing.T) {
	dir, _ := smallRun(t)
	code, stdout, stderr := runCmd(t, "report", dir)
	require.Equal(t, 0, code, "stderr: %s", stderr)
	assert.Empty(t, stderr)
	assert.Equal(t, []string{
		filepath.Join(dir, "report.json"), filepath.Join(dir, "report.md"), filepath.Join(dir, "report.html"),
	}, strings.Fields(stdout))

	rep := clitest.ReadReport(t, dir)
	assert.Equal(t, "r1", rep.RunID)
	require.Len(t, rep.Intents, 1)
	assert.Equal(t, 4, rep.Intents[0].Pairs.Complete)

	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(md), "**pairbench verdict: "+string(rep.Verdict)+"**"), "%s", md)
	html, err := os.ReadFile(filepath.Join(dir, "report.html"))
	require.NoError(t, err)
	assert.Contains(t, string(html), "<code>books-cheapest</code>")

	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range entries {
		assert.False(t, strings.HasSuffix(e.Name(), ".tmp"), "temporary file %s left behind", e.Name())
	}
}

func TestReportOutAndLink(t *testing.T) {
	dir, _ := smallRun(t)
	out := filepath.Join(t.TempDir(), "nested", "reports")
	code, _, stderr := runCmd(t, "report", dir, "--out", out, "--link", "https://ci.example/r1/report.html")
	require.Equal(t, 0, code, "stderr: %s", stderr)

	md, err := os.ReadFile(filepath.Join(out, "report.md"))
	require.NoError(t, err)
	assert.Contains(t, string(md), "[full report](<https://ci.example/r1/report.html>)")
	_, err = os.Stat(filepath.Join(dir, "report.md"))
	assert.ErrorIs(t, err, os.ErrNotExist, "--out writes nothing into RUN_DIR")
}

func TestReportReplacesOldReports(t *testing.T) {
	dir, _ := smallRun(t)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "report.md"), []byte(strings.Repeat("stale ", 50_000)), 0o644))
	code, _, stderr := runCmd(t, "report", dir)
	require.Equal(t, 0, code, "stderr: %s", stderr)
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	require.NoError(t, err)
	assert.NotContains(t, string(md), "stale")
}

func TestReportSkipsPartialLastLine(t *testing.T) {
	dir, rows := smallRun(t)
	extra, err := pairbench.AppendRow(nil, pairbench.Row{RunID: "r1", Intent: "books-cheapest", Stage: pairbench.StagePair, Pair: 9, Order: pairbench.AB, Arm: pairbench.Control, Attempt: 1, Outcome: pairbench.Correct})
	require.NoError(t, err)
	cut := append(append([]byte{}, rows...), extra[:len(extra)/2]...)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "rows.jsonl"), cut, 0o644))

	code, _, stderr := runCmd(t, "report", dir)
	require.Equal(t, 0, code, "stderr: %s", stderr)
	assert.Contains(t, stderr, "rows.jsonl:9: skipped a partial last line")
	assert.Equal(t, 4, clitest.ReadReport(t, dir).Intents[0].Pairs.Seen, "the cut row's pair is not counted")
}

func TestReportFailsOnBadRowWithLineNumber(t *testing.T) {
	dir, rows := smallRun(t)
	lines := strings.SplitAfter(string(rows), "\n")
	lines[2] = `{"v":1,"intent":"books-cheapest","arm":"both","outcome":"correct","stage":"pair","order":"AB","attempt":1}` + "\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "rows.jsonl"), []byte(strings.Join(lines, "")), 0o644))

	code, stdout, stderr := runCmd(t, "report", dir)
	assert.Equal(t, exitFailure, code)
	assert.Empty(t, stdout)
	assert.Contains(t, stderr, "rows.jsonl:3: unknown arm \"both\"")
	_, err := os.Stat(filepath.Join(dir, "report.json"))
	assert.ErrorIs(t, err, os.ErrNotExist, "no report from bad rows")
}

func TestReportLeavesOutOtherRuns(t *testing.T) {
	dir, rows := smallRun(t)
	other, err := pairbench.AppendRow(nil, pairbench.Row{RunID: "r2", Intent: "books-cheapest", Stage: pairbench.StagePair, Pair: 7, Order: pairbench.AB, Arm: pairbench.Control, Attempt: 1, Outcome: pairbench.Correct})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "rows.jsonl"), append(rows, other...), 0o644))

	code, _, stderr := runCmd(t, "report", dir)
	require.Equal(t, 0, code, "stderr: %s", stderr)
	assert.Contains(t, stderr, `left out 1 rows whose run_id is not "r1"`)
	assert.Equal(t, 4, clitest.ReadReport(t, dir).Intents[0].Pairs.Seen)
}

func TestReportWithoutRowsYet(t *testing.T) {
	dir, _ := smallRun(t)
	require.NoError(t, os.Remove(filepath.Join(dir, "rows.jsonl")))
	code, _, stderr := runCmd(t, "report", dir)
	require.Equal(t, 0, code, "stderr: %s", stderr)
	assert.Contains(t, stderr, "has no rows.jsonl yet; reporting a run with no trials")
	rep := clitest.ReadReport(t, dir)
	require.Len(t, rep.Intents, 1)
	assert.Equal(t, 0, rep.Intents[0].Pairs.Complete)
	assert.Equal(t, 4, rep.Intents[0].Pairs.Planned)
}

func TestReportReadsShards(t *testing.T) {
	dir, rows := smallRun(t)
	require.NoError(t, os.Remove(filepath.Join(dir, "rows.jsonl")))
	lines := strings.SplitAfter(strings.TrimSuffix(string(rows), "\n"), "\n")
	require.Len(t, lines, 8)
	// Pairs 0 and 2 ran on shard 1, pairs 1 and 3 on shard 2; shard 2's
	// runner was killed while appending a row of an unplanned pair.
	shard := map[string]string{
		"1": lines[0] + lines[1] + lines[4] + lines[5],
		"2": lines[2] + lines[3] + lines[6] + lines[7] + "\n" + `{"v":1,"run_id":"r1","intent":"books-cheapest","pair":9`,
	}
	for k, content := range shard {
		require.NoError(t, os.MkdirAll(filepath.Join(dir, "shards", k), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "shards", k, "rows.jsonl"), []byte(content), 0o644))
	}

	code, _, stderr := runCmd(t, "report", dir)
	require.Equal(t, 0, code, "stderr: %s", stderr)
	assert.Contains(t, stderr, filepath.Join("shards", "2", "rows.jsonl")+":5: skipped a partial last line")
	assert.Equal(t, 4, clitest.ReadReport(t, dir).Intents[0].Pairs.Complete, "the report sees every shard's pairs")

	require.NoError(t, os.WriteFile(filepath.Join(dir, "shards", "1", "rows.jsonl"), []byte(lines[0]+"{}\n"), 0o644))
	code, _, stderr = runCmd(t, "report", dir)
	assert.Equal(t, exitFailure, code)
	assert.Contains(t, stderr, filepath.Join("shards", "1", "rows.jsonl")+":2: unsupported row version 0")
}

func TestReportErrors(t *testing.T) {
	empty := t.TempDir()
	code, _, stderr := runCmd(t, "report", empty)
	assert.Equal(t, exitFailure, code)
	assert.Contains(t, stderr, "has no run.json, so it is not a run directory")

	bad := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(bad, "run.json"), []byte("{\n  \"v\": 1,\n  oops\n}"), 0o644))
	code, _, stderr = runCmd(t, "report", bad)
	assert.Equal(t, exitFailure, code)
	assert.Contains(t, stderr, "run.json:3:")

	code, _, stderr = runCmd(t, "report")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, stderr, "report takes one RUN_DIR")

	code, _, _ = runCmd(t, "report", empty, "--no-such-flag")
	assert.Equal(t, exitUsage, code)
}

// TestDemoReportHasEveryLabel checks the promise of examples/runs/demo:
// its report shows every label at least once.
func TestDemoReportHasEveryLabel(t *testing.T) {
	out := t.TempDir()
	code, _, stderr := runCmd(t, "report", demoDir, "--out", out)
	require.Equal(t, 0, code, "stderr: %s", stderr)
	assert.Empty(t, stderr)

	rep := clitest.ReadReport(t, out)
	seen := make(map[pairbench.Label]int)
	for _, in := range rep.Intents {
		seen[in.Label]++
	}
	for _, l := range pairbench.Labels {
		assert.Positive(t, seen[l], "no intent of the demo is labelled %q", l)
	}
	assert.True(t, rep.Model.Scripted, "the demo's rows are synthetic and say so")
}

// TestDemoReportsAreCurrent compares the committed reports of the demo with
// what pairbench report writes now.
func TestDemoReportsAreCurrent(t *testing.T) {
	out := t.TempDir()
	code, _, stderr := runCmd(t, "report", demoDir, "--out", out)
	require.Equal(t, 0, code, "stderr: %s", stderr)
	for _, name := range []string{"report.json", "report.md", "report.html"} {
		got, err := os.ReadFile(filepath.Join(out, name))
		require.NoError(t, err)
		want, err := os.ReadFile(filepath.Join(demoDir, name))
		require.NoError(t, err)
		assert.Equal(t, string(want), string(got), "examples/runs/demo/%s is stale; run: go run ./cmd/pairbench report examples/runs/demo", name)
	}
}
