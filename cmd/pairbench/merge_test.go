package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/artifacts"
	"github.com/pairbench/pairbench/internal/clitest"
	"github.com/pairbench/pairbench/rundir"
)

// shardedRun stores smallRun's run "r1" in store as a run split over two
// shards (even pairs in shard 1, odd in shard 2) with one trial file, and
// returns the unsplit run directory.
func shardedRun(t *testing.T, store artifacts.Store) string {
	t.Helper()
	dir, rows := smallRun(t)
	plan, err := os.ReadFile(filepath.Join(dir, "run.json"))
	require.NoError(t, err)
	shards := map[int][]byte{}
	parsed, _, err := pairbench.ReadRows(bytes.NewReader(rows))
	require.NoError(t, err)
	for _, r := range parsed {
		k := 1 + r.Pair%2
		shards[k], err = pairbench.AppendRow(shards[k], r)
		require.NoError(t, err)
	}
	put := func(key string, data []byte) {
		require.NoError(t, store.Put(t.Context(), key, bytes.NewReader(data)))
	}
	put("r1/run.json", plan)
	put("r1/shards/1/rows.jsonl", shards[1])
	put("r1/shards/2/rows.jsonl", shards[2])
	put("r1/trials/books-cheapest/0-control/transcript.jsonl", []byte("{}\n"))
	put("r2/run.json", []byte("{}")) // another run in the same store
	return dir
}

// stores runs fn against a directory store and against a real S3 server.
func stores(t *testing.T, fn func(t *testing.T, location string, store artifacts.Store)) {
	t.Run("local", func(t *testing.T) {
		loc := t.TempDir()
		s, err := artifacts.Open(t.Context(), loc)
		require.NoError(t, err)
		fn(t, loc, s)
	})
	t.Run("s3", func(t *testing.T) {
		loc := clitest.StartS3(t, "bench")
		s, err := artifacts.Open(t.Context(), loc)
		require.NoError(t, err)
		fn(t, loc, s)
	})
}

func TestMergeGivesTheUnsplitReport(t *testing.T) {
	stores(t, func(t *testing.T, loc string, store artifacts.Store) {
		whole := shardedRun(t, store)
		out := filepath.Join(t.TempDir(), "merged")

		code, stdout, stderr := runCmd(t, "merge", "--store", loc, "--run-id", "r1", "--out", out)
		require.Equal(t, exitOK, code, stderr)
		assert.Equal(t, out+"\n", stdout)
		for _, f := range []string{"run.json", "shards/1/rows.jsonl", "shards/2/rows.jsonl"} {
			assert.FileExists(t, filepath.Join(out, f))
		}
		assert.NoDirExists(t, filepath.Join(out, "trials"), "trials are fetched only with --trials")

		code, _, stderr = runCmd(t, "report", out)
		require.Equal(t, exitOK, code, stderr)
		code, _, stderr = runCmd(t, "report", whole)
		require.Equal(t, exitOK, code, stderr)
		merged, err := os.ReadFile(filepath.Join(out, "report.json"))
		require.NoError(t, err)
		unsplit, err := os.ReadFile(filepath.Join(whole, "report.json"))
		require.NoError(t, err)
		assert.JSONEq(t, string(unsplit), string(merged))
		assert.Len(t, clitest.ReadReport(t, out).Intents, 1)
	})
}

func TestMergeReportPublishesAndLinks(t *testing.T) {
	stores(t, func(t *testing.T, loc string, store artifacts.Store) {
		shardedRun(t, store)
		out := filepath.Join(t.TempDir(), "merged")

		code, stdout, stderr := runCmd(t, "merge", "--store", loc, "--run-id", "r1", "--out", out, "--trials", "--report", "--link-ttl", "1h")
		require.Equal(t, exitOK, code, stderr)
		lines := strings.Split(strings.TrimSpace(stdout), "\n")
		require.Len(t, lines, 5, stdout)
		assert.Equal(t, out, lines[0])
		assert.Equal(t, filepath.Join(out, "report.json"), lines[1])
		assert.FileExists(t, filepath.Join(out, "trials/books-cheapest/0-control/transcript.jsonl"))

		for _, name := range []string{"report.json", "report.md", "report.html"} {
			rc, err := store.Get(t.Context(), "r1/"+name)
			require.NoError(t, err, name)
			stored, err := io.ReadAll(rc)
			rc.Close()
			require.NoError(t, err, name)
			local, err := os.ReadFile(filepath.Join(out, name))
			require.NoError(t, err)
			assert.Equal(t, local, stored, "%s is published as written", name)
		}
		link := lines[4]
		if strings.HasPrefix(loc, "s3://") {
			require.True(t, strings.HasPrefix(link, "http://"), link)
			resp, err := http.Get(link)
			require.NoError(t, err)
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			assert.Equal(t, http.StatusOK, resp.StatusCode)
			assert.Contains(t, string(body), "<html")
		} else {
			assert.True(t, strings.HasPrefix(link, "file://"), link)
		}
	})
}

func TestMergeRefusesShardsOfAnotherPlan(t *testing.T) {
	ctx := context.Background()
	loc := t.TempDir()
	store, err := artifacts.Open(ctx, loc)
	require.NoError(t, err)
	shardedRun(t, store)

	// A third shard from a run planned with another seed: pair 1 ran BA
	// where this plan has AB... and it repeats pair 0, which shard 1 has.
	var rows []byte
	for _, r := range []pairbench.Row{
		{RunID: "r1", Intent: "books-cheapest", Domain: "books.example", Stage: pairbench.StagePair, Pair: 0,
			Order: pairbench.BA, Arm: pairbench.Treatment, Attempt: 1, Outcome: pairbench.Correct, WallSeconds: 1},
		{RunID: "r1", Intent: "books-cheapest", Domain: "books.example", Stage: pairbench.StagePair, Pair: 2,
			Order: pairbench.AB, Arm: pairbench.Control, Attempt: 1, Outcome: pairbench.Correct, WallSeconds: 1},
		{RunID: "r9", Intent: "books-cheapest", Domain: "books.example", Stage: pairbench.StagePair, Pair: 3,
			Order: pairbench.BA, Arm: pairbench.Control, Attempt: 1, Outcome: pairbench.Correct, WallSeconds: 1},
		{RunID: "r1", Intent: "weather-high", Domain: "weather.example", Stage: pairbench.StagePair, Pair: 0,
			Order: pairbench.AB, Arm: pairbench.Control, Attempt: 1, Outcome: pairbench.Correct, WallSeconds: 1},
		{RunID: "r1", Intent: "books-cheapest", Domain: "books.example", Stage: pairbench.StagePair, Pair: 7,
			Order: pairbench.AB, Arm: pairbench.Control, Attempt: 1, Outcome: pairbench.Correct, WallSeconds: 1},
	} {
		rows, err = pairbench.AppendRow(rows, r)
		require.NoError(t, err)
	}
	require.NoError(t, store.Put(ctx, "r1/shards/3/rows.jsonl", bytes.NewReader(rows)))

	out := filepath.Join(t.TempDir(), "merged")
	code, _, stderr := runCmd(t, "merge", "--store", loc, "--run-id", "r1", "--out", out)
	assert.Equal(t, exitFailure, code)
	for _, want := range []string{
		"shards/3/rows.jsonl row 1: books-cheapest pair 0 ran in order BA, planned AB",
		"shards/3/rows.jsonl row 2: books-cheapest pair 2 also has rows in shards/1/rows.jsonl",
		`shards/3/rows.jsonl row 3: run id "r9", not "r1"`,
		"shards/3/rows.jsonl row 4: intent weather-high is not in the plan",
		"shards/3/rows.jsonl row 5: books-cheapest pair 7 is not in the plan",
	} {
		assert.Contains(t, stderr, want)
	}
	assert.NoFileExists(t, filepath.Join(out, "run.json"), "nothing is written when the shards do not match")
}

func TestMergeMissingRunAndBadFlags(t *testing.T) {
	loc := t.TempDir()
	store, err := artifacts.Open(t.Context(), loc)
	require.NoError(t, err)
	shardedRun(t, store)
	require.NoError(t, store.Put(t.Context(), "empty/run.json", strings.NewReader("{}")))

	code, _, stderr := runCmd(t, "merge", "--store", loc, "--run-id", "nope", "--out", filepath.Join(t.TempDir(), "o"))
	assert.Equal(t, exitFailure, code)
	assert.Contains(t, stderr, "run nope has no run.json")

	code, _, stderr = runCmd(t, "merge", "--store", loc, "--run-id", "empty", "--out", filepath.Join(t.TempDir(), "o"))
	assert.Equal(t, exitFailure, code)
	assert.Contains(t, stderr, "has no rows yet")

	full := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(full, "old"), nil, 0o644))
	for _, args := range [][]string{
		{"merge", "--store", loc, "--run-id", "r1", "--out", full},
		{"merge", "--store", loc, "--run-id", "r1"},
		{"merge", "--store", loc, "--run-id", "../r1", "--out", t.TempDir()},
		{"merge", "--store", loc, "--run-id", "r1", "--out", t.TempDir(), "--link-ttl", "200h"},
		{"merge", "extra", "--store", loc, "--run-id", "r1", "--out", t.TempDir()},
	} {
		code, _, stderr := runCmd(t, args...)
		assert.Equal(t, exitUsage, code, "%v: %s", args, stderr)
	}
}

// TestMergeReportOfAMissingShardIsNotPublished merges a run whose shard 2
// never uploaded: merge --report writes the report, whose first line says
// the run is incomplete, publishes nothing, and exits 1.
func TestMergeReportOfAMissingShardIsNotPublished(t *testing.T) {
	stores(t, func(t *testing.T, loc string, store artifacts.Store) {
		shardedRun(t, store)
		require.NoError(t, store.Delete(t.Context(), "r1/shards/2/rows.jsonl"))
		out := filepath.Join(t.TempDir(), "merged")

		code, _, stderr := runCmd(t, "merge", "--store", loc, "--run-id", "r1", "--out", out, "--report")
		assert.Equal(t, exitFailure, code)
		assert.Contains(t, stderr, "run r1 is incomplete: 2 of 4 planned pairs have not run")
		md, err := os.ReadFile(filepath.Join(out, "report.md"))
		require.NoError(t, err)
		assert.True(t, strings.HasPrefix(string(md), "**pairbench: incomplete run, no verdict**: 2 of 4 planned pairs not run yet"), "%.120s", md)
		for _, name := range []string{"report.json", "report.md", "report.html"} {
			ok, err := artifacts.Exists(t.Context(), store, "r1/"+name)
			require.NoError(t, err)
			assert.False(t, ok, "%s is not published", name)
		}
	})
}

// bothRuns stores, beside shardedRun's run "r1", the second run of
// compare: both, "r1-none" (the same rows under its own id), split over
// two shards too, and names it in r1's plan (also_against_none).
func bothRuns(t *testing.T, store artifacts.Store) {
	t.Helper()
	dir := shardedRun(t, store)
	data, err := os.ReadFile(filepath.Join(dir, "run.json"))
	require.NoError(t, err)
	var plan rundir.Plan
	require.NoError(t, json.Unmarshal(data, &plan))
	put := func(key string, v any) {
		b, ok := v.([]byte)
		if !ok {
			var err error
			b, err = json.Marshal(v)
			require.NoError(t, err)
		}
		require.NoError(t, store.Put(t.Context(), key, bytes.NewReader(b)))
	}
	plan.AlsoAgainstNone = []string{"books.example"}
	put("r1/run.json", plan)
	plan.RunID, plan.AlsoAgainstNone = "r1-none", nil
	put("r1-none/run.json", plan)
	rows, err := os.ReadFile(filepath.Join(dir, "rows.jsonl"))
	require.NoError(t, err)
	parsed, _, err := pairbench.ReadRows(bytes.NewReader(rows))
	require.NoError(t, err)
	shards := map[int][]byte{}
	for _, r := range parsed {
		r.RunID = "r1-none"
		shards[1+r.Pair%2], err = pairbench.AppendRow(shards[1+r.Pair%2], r)
		require.NoError(t, err)
	}
	put("r1-none/shards/1/rows.jsonl", shards[1])
	put("r1-none/shards/2/rows.jsonl", shards[2])
}

// TestMergeReportsBothComparisons merges a run whose plan names a second
// run (compare: both): merge fetches both, the second into --out with
// "-none" after it, and reports, publishes and links both, the first's
// link first. A second run whose shards are missing fails the merge
// before anything is published.
func TestMergeReportsBothComparisons(t *testing.T) {
	stores(t, func(t *testing.T, loc string, store artifacts.Store) {
		bothRuns(t, store)
		out := filepath.Join(t.TempDir(), "merged")

		code, stdout, stderr := runCmd(t, "merge", "--store", loc, "--run-id", "r1", "--out", out, "--report",
			"--site-url", "https://reports.example/runs")
		require.Equal(t, exitOK, code, stderr)
		lines := strings.Split(strings.TrimSpace(stdout), "\n")
		require.GreaterOrEqual(t, len(lines), 4, stdout)
		assert.Equal(t, []string{out, out + "-none"}, lines[:2], "both run directories")
		var links []string
		for _, l := range lines {
			if strings.HasPrefix(l, "https://") {
				links = append(links, l)
			}
		}
		assert.Equal(t, []string{"https://reports.example/runs/r1/report.html", "https://reports.example/runs/r1-none/report.html"}, links,
			"the first run's link first")
		for _, run := range []string{"r1", "r1-none"} {
			ok, err := artifacts.Exists(t.Context(), store, run+"/report.json")
			require.NoError(t, err)
			assert.True(t, ok, "%s's report is published", run)
		}
		assert.Equal(t, "r1-none", clitest.ReadReport(t, out+"-none").RunID)
		assert.Equal(t, "r1", clitest.ReadReport(t, out).RunID)

		// Without --report, both are merged and nothing is reported.
		bare := filepath.Join(t.TempDir(), "bare")
		code, stdout, stderr = runCmd(t, "merge", "--store", loc, "--run-id", "r1", "--out", bare)
		require.Equal(t, exitOK, code, stderr)
		assert.Equal(t, bare+"\n"+bare+"-none\n", stdout)
		assert.FileExists(t, filepath.Join(bare+"-none", "shards/2/rows.jsonl"))

		// The second run's shards missing: nothing is published.
		for _, key := range []string{"r1/report.json", "r1-none/report.json", "r1-none/shards/1/rows.jsonl", "r1-none/shards/2/rows.jsonl"} {
			require.NoError(t, store.Delete(t.Context(), key))
		}
		code, _, stderr = runCmd(t, "merge", "--store", loc, "--run-id", "r1", "--out", filepath.Join(t.TempDir(), "again"), "--report")
		assert.Equal(t, exitFailure, code)
		assert.Contains(t, stderr, "compare: both: the run against no tools (r1-none)")
		ok, err := artifacts.Exists(t.Context(), store, "r1/report.json")
		require.NoError(t, err)
		assert.False(t, ok, "the first run is not published without its second")
	})
}
