package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench"
)

var update = flag.Bool("update", false, "rewrite testdata/golden from what pairbench writes now")

// examplesDir holds the committed example runs.
const examplesDir = "../../examples/runs"

// TestReportGolden holds `pairbench report` and `pairbench merge --report`
// to what they wrote when the golden files were made, byte for byte:
// report.json, and what each command printed (run directories shown as
// RUN). It covers every committed example run as it is, and each split the
// ways a run directory can hold its rows: over shards, with a partial last
// line, with rows of another run, and gathered by merge from a store.
//
// A change meant to alter the report rewrites the golden files with
// `go test ./cmd/pairbench -run TestReportGolden -update` and shows the diff
// in review; a refactor leaves them alone.
func TestReportGolden(t *testing.T) {
	entries, err := os.ReadDir(examplesDir)
	require.NoError(t, err)
	var runs []string
	for _, e := range entries {
		if _, err := os.Stat(filepath.Join(examplesDir, e.Name(), "run.json")); err == nil {
			runs = append(runs, e.Name())
		}
	}
	require.NotEmpty(t, runs, "no example run under %s", examplesDir)

	for _, name := range runs {
		src := filepath.Join(examplesDir, name)
		t.Run(name, func(t *testing.T) {
			out := t.TempDir()
			code, stdout, stderr := runCmd(t, "report", src, "--out", out)
			require.Equal(t, exitOK, code, stderr)
			golden(t, name, out, stdout, stderr, out)
		})
		t.Run(name+"/shards", func(t *testing.T) {
			dir := splitRun(t, src, false)
			code, stdout, stderr := runCmd(t, "report", dir)
			require.Equal(t, exitOK, code, stderr)
			golden(t, name+"-shards", dir, stdout, stderr, dir)
		})
		t.Run(name+"/mixed", func(t *testing.T) {
			dir := splitRun(t, src, true)
			code, stdout, stderr := runCmd(t, "report", dir)
			require.Equal(t, exitOK, code, stderr)
			golden(t, name+"-mixed", dir, stdout, stderr, dir)
		})
		t.Run(name+"/merge", func(t *testing.T) {
			store := splitRun(t, src, false)
			// A store holds runs under their ids: the run directory moves
			// under one.
			runID := planRunID(t, store)
			storeRoot := t.TempDir()
			require.NoError(t, os.Rename(store, filepath.Join(storeRoot, runID)))
			out := filepath.Join(t.TempDir(), "merged")
			code, stdout, stderr := runCmd(t, "merge", "--store", storeRoot, "--run-id", runID, "--out", out, "--report")
			require.Equal(t, exitOK, code, stderr)
			stdout = strings.ReplaceAll(stdout, storeRoot, "STORE")
			golden(t, name+"-merge", out, stdout, stderr, out)
		})
	}
}

// splitRun copies the run in src to a new directory with its pair rows
// spread over three shards by pair number, each shard ending in the first
// half of a row a killed writer left. With mixed, the adoption rows and
// shard 3's rows stay in rows.jsonl, which also gets a row of another run.
func splitRun(t *testing.T, src string, mixed bool) string {
	t.Helper()
	dir := t.TempDir()
	plan, err := os.ReadFile(filepath.Join(src, "run.json"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "run.json"), plan, 0o644))
	f, err := os.Open(filepath.Join(src, "rows.jsonl"))
	require.NoError(t, err)
	rows, partial, err := pairbench.ReadRows(f)
	f.Close()
	require.NoError(t, err)
	require.Zero(t, partial)

	files := map[string][]byte{}
	for _, r := range rows {
		rel := filepath.Join("shards", string(rune('1'+r.Pair%3)), "rows.jsonl")
		if mixed && (r.Stage == pairbench.StageAdoption || r.Pair%3 == 2) {
			rel = "rows.jsonl"
		}
		files[rel], err = pairbench.AppendRow(files[rel], r)
		require.NoError(t, err)
	}
	if mixed {
		foreign := rows[0]
		foreign.RunID = "another-run"
		files["rows.jsonl"], err = pairbench.AppendRow(files["rows.jsonl"], foreign)
		require.NoError(t, err)
	}
	for rel, data := range files {
		if strings.HasPrefix(rel, "shards") {
			cut, err := pairbench.AppendRow(nil, rows[len(rows)-1])
			require.NoError(t, err)
			data = append(data, cut[:len(cut)/2]...)
		}
		path := filepath.Join(dir, rel)
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, data, 0o644))
	}
	return dir
}

// planRunID returns the run id in dir/run.json.
func planRunID(t *testing.T, dir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "run.json"))
	require.NoError(t, err)
	var head struct {
		RunID string `json:"run_id"`
	}
	require.NoError(t, json.Unmarshal(b, &head))
	return head.RunID
}

// golden compares out/report.json and the command's output, with runDir
// written as RUN, with testdata/golden/<name>.*; -update rewrites them.
func golden(t *testing.T, name, out, stdout, stderr, runDir string) {
	t.Helper()
	report, err := os.ReadFile(filepath.Join(out, "report.json"))
	require.NoError(t, err)
	printed := "stdout:\n" + stdout + "stderr:\n" + stderr
	printed = strings.ReplaceAll(printed, runDir, "RUN")
	files := map[string][]byte{name + ".report.json": report, name + ".out": []byte(printed)}
	for file, got := range files {
		path := filepath.Join("testdata", "golden", file)
		if *update {
			require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
			require.NoError(t, os.WriteFile(path, got, 0o644))
			continue
		}
		want, err := os.ReadFile(path)
		require.NoError(t, err, "no golden file; make it with -update")
		if !bytes.Equal(want, got) {
			assert.Equal(t, string(want), string(got), "%s differs from what pairbench writes now", path)
		}
	}
}
