package rundir

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/artifacts"
)

// runRows are rows of testPlan's run: trial i is pair i/2 of
// books-cheapest, control for even i and treatment for odd.
func runRows(trials ...int) []pairbench.Row {
	var out []pairbench.Row
	for _, i := range trials {
		r := testRow(i / 2)
		r.RunID, r.Intent, r.Domain, r.Order = "r1", "books-cheapest", "books.example", testPlan().Intents[0].Pairs[i/2].Order
		if i%2 == 1 {
			r.Arm = pairbench.Treatment
		}
		out = append(out, r)
	}
	return out
}

func encodeRows(t *testing.T, rows []pairbench.Row) []byte {
	t.Helper()
	var b []byte
	for _, r := range rows {
		var err error
		b, err = pairbench.AppendRow(b, r)
		require.NoError(t, err)
	}
	return b
}

// storeRun puts a run's plan and rows files into store, as its uploads did.
func storeRun(t *testing.T, store artifacts.Store, files map[string][]byte) {
	t.Helper()
	for rel, data := range files {
		require.NoError(t, store.Put(t.Context(), StoreKey("r1", rel), bytes.NewReader(data)))
	}
}

func planJSON(t *testing.T, p *Plan) []byte {
	t.Helper()
	d := RunDir{Path: t.TempDir()}
	require.NoError(t, d.WritePlan(p))
	b, err := os.ReadFile(d.File(PlanFile))
	require.NoError(t, err)
	return b
}

// TestReconcileResumesFromTheStore is a CI job re-run on a fresh machine:
// the runs directory is empty, the store holds the plan and two rows. The
// directory takes both, so the resume runs only what is left, and the next
// upload holds every stored row.
func TestReconcileResumesFromTheStore(t *testing.T) {
	store, err := artifacts.NewLocal(t.TempDir())
	require.NoError(t, err)
	rows := runRows(0, 1)
	rows[0].TrialDir, rows[1].TrialDir = "trials/books-cheapest/0-control", "trials/books-cheapest/0-treatment"
	storeRun(t, store, map[string][]byte{PlanFile: planJSON(t, testPlan()), RowsFile: encodeRows(t, rows),
		"trials/books-cheapest/0-control/transcript.jsonl":   []byte("{}\n"),
		"trials/books-cheapest/0-control/screenshot.png":     []byte("png"),
		"trials/books-cheapest/0-treatment/transcript.jsonl": []byte("{}\n"),
		// a trial directory no taken row names
		"trials/books-cheapest/1-control/transcript.jsonl": []byte("{}\n"),
	})

	dir := RunDir{Path: filepath.Join(t.TempDir(), "r1")}
	fetched, warnings, err := dir.Reconcile(t.Context(), store, "r1", 0, 0)
	require.NoError(t, err)
	var said []string
	for _, p := range warnings {
		said = append(said, p.String())
	}
	assert.True(t, fetched, "the plan came from the store")
	assert.Len(t, rowsOf(t, dir, RowsFile), 2, "the stored rows are the directory's")
	assert.Equal(t, []string{dir.File(RowsFile) + ": took 2 rows from the store that this directory lacked"}, said)
	for _, f := range []string{"0-control/transcript.jsonl", "0-control/screenshot.png", "0-treatment/transcript.jsonl"} {
		assert.FileExists(t, dir.File("trials/books-cheapest/"+f), "the taken rows' trial files, for their pages")
	}
	assert.NoDirExists(t, dir.File("trials/books-cheapest/1-control"), "only the taken rows' trials")

	// A row recorded locally after the last upload is kept; a second
	// reconcile takes nothing twice.
	rl, err := dir.OpenRowLog(0)
	require.NoError(t, err)
	require.NoError(t, rl.Append(runRows(2)[0]))
	require.NoError(t, rl.Close())
	fetched, warnings, err = dir.Reconcile(t.Context(), store, "r1", 0, 0)
	require.NoError(t, err)
	assert.False(t, fetched)
	assert.Empty(t, warnings, "nothing taken twice")
	assert.Len(t, rowsOf(t, dir, RowsFile), 3)

	s, err := dir.Syncer(store, "r1", 0)
	require.NoError(t, err)
	_, err = s.Sync(t.Context())
	require.NoError(t, err)
	rc, err := store.Get(t.Context(), "r1/rows.jsonl")
	require.NoError(t, err)
	got, _ := io.ReadAll(rc)
	rc.Close()
	assert.Equal(t, encodeRows(t, append(rows, runRows(2)...)), got, "the upload holds every row the store held")
}

// TestReconcileRefusesWhatWouldMixTwoRuns gives a runner a directory and a
// store that disagree: each is refused with what is wrong.
func TestReconcileRefusesWhatWouldMixTwoRuns(t *testing.T) {
	other := testPlan()
	other.Seed = 43
	changed := runRows(0)
	changed[0].Outcome = pairbench.Wrong
	for name, c := range map[string]struct {
		stored, local map[string][]byte
		k, n          int
		want          string
	}{
		"two plans": {
			stored: map[string][]byte{PlanFile: planJSON(t, other)},
			local:  map[string][]byte{PlanFile: planJSON(t, testPlan())},
			want:   "two different plans under one run id",
		},
		"a row recorded twice, differently": {
			stored: map[string][]byte{PlanFile: planJSON(t, testPlan()), RowsFile: encodeRows(t, changed)},
			local:  map[string][]byte{PlanFile: planJSON(t, testPlan()), RowsFile: encodeRows(t, runRows(0))},
			want:   "books-cheapest pair 0 control attempt 1 is recorded differently",
		},
		"a clash says which copy is kept, and how to keep either": {
			stored: map[string][]byte{PlanFile: planJSON(t, testPlan()), RowsFile: encodeRows(t, changed)},
			local:  map[string][]byte{PlanFile: planJSON(t, testPlan()), RowsFile: encodeRows(t, runRows(0))},
			want:   "two runners ran it. Nothing was changed: the store's copy is kept as it is, and this directory's rows are not uploaded over it. To keep the store's copy, move ",
		},
		"stored rows without a plan": {
			stored: map[string][]byte{RowsFile: encodeRows(t, runRows(0))},
			want:   "holds rows (rows.jsonl) but no run.json",
		},
		"rows without a plan here": {
			stored: map[string][]byte{},
			local:  map[string][]byte{RowsFile: encodeRows(t, runRows(0))},
			want:   "holds rows (rows.jsonl) but no run.json",
		},
		"a split run resumed whole": {
			stored: map[string][]byte{PlanFile: planJSON(t, testPlan()), "shards/1/rows.jsonl": encodeRows(t, runRows(0))},
			want:   "split across runners (shards/1/rows.jsonl)",
		},
		"a whole run resumed as a shard": {
			stored: map[string][]byte{PlanFile: planJSON(t, testPlan()), RowsFile: encodeRows(t, runRows(0))},
			k:      1, n: 2,
			want: "cannot be resumed as shard 1/2",
		},
		"another split": {
			stored: map[string][]byte{PlanFile: planJSON(t, testPlan()), "shards/3/rows.jsonl": encodeRows(t, runRows(0))},
			k:      1, n: 2,
			want: "split into more shards than 2",
		},
	} {
		t.Run(name, func(t *testing.T) {
			store, err := artifacts.NewLocal(t.TempDir())
			require.NoError(t, err)
			storeRun(t, store, c.stored)
			dir := RunDir{Path: t.TempDir()}
			for rel, data := range c.local {
				require.NoError(t, dir.WriteFile(rel, data))
			}
			before, _ := os.ReadFile(dir.File(RowsFile))
			_, _, err = dir.Reconcile(t.Context(), store, "r1", c.k, c.n)
			assert.ErrorContains(t, err, c.want)
			after, _ := os.ReadFile(dir.File(RowsFile))
			assert.Equal(t, before, after, "nothing was appended")
		})
	}
}

// TestCheckStoreRefusesTheRunsDirectory names the runs directory as the
// store in every spelling: each is refused before anything is written;
// another directory is not.
func TestCheckStoreRefusesTheRunsDirectory(t *testing.T) {
	root := t.TempDir()
	runs := filepath.Join(root, "runs")
	require.NoError(t, os.MkdirAll(filepath.Join(root, "elsewhere"), 0o755))
	require.NoError(t, os.Symlink(runs, filepath.Join(root, "link")))
	dir := RunDir{Path: filepath.Join(runs, "r1")}
	wd, err := os.Getwd()
	require.NoError(t, err)
	rel, err := filepath.Rel(wd, runs)
	require.NoError(t, err)
	for _, loc := range []string{
		runs, runs + "/", "file://" + runs, filepath.Join(root, "elsewhere", "..", "runs"), rel,
		filepath.Join(root, "link"), filepath.Join(runs, "r1"), filepath.Join(runs, "r1", "store"),
	} {
		store, err := artifacts.Open(t.Context(), loc)
		require.NoError(t, err, loc)
		err = dir.CheckStore(store, "r1")
		assert.ErrorContains(t, err, "a store must be another place than --runs-dir", loc)
	}
	store, err := artifacts.Open(t.Context(), filepath.Join(root, "elsewhere"))
	require.NoError(t, err)
	assert.NoError(t, dir.CheckStore(store, "r1"))
}

// TestFetchFinishesAFetchThatWasKilled leaves the mark of a fetch killed
// midway: the next Fetch of the same run fills the directory afresh; one of
// another run, or a directory with other files, is still refused.
func TestFetchFinishesAFetchThatWasKilled(t *testing.T) {
	store, err := artifacts.NewLocal(t.TempDir())
	require.NoError(t, err)
	storeRun(t, store, map[string][]byte{PlanFile: planJSON(t, testPlan()), RowsFile: encodeRows(t, runRows(0, 1))})
	out := RunDir{Path: t.TempDir()}
	require.NoError(t, os.WriteFile(out.File(fetchMark), []byte("r1"), 0o644))
	require.NoError(t, out.WriteFile(RowsFile, []byte(`{"half`)))

	_, _, err = out.Fetch(context.Background(), store, "r1", false)
	require.NoError(t, err)
	assert.Len(t, rowsOf(t, out, RowsFile), 2)
	assert.NoFileExists(t, out.File(fetchMark), "a finished fetch leaves no mark")

	_, _, err = out.Fetch(context.Background(), store, "r1", false)
	assert.ErrorIs(t, err, ErrNotEmpty, "a finished fetch is not fetched over")
	other := RunDir{Path: t.TempDir()}
	require.NoError(t, os.WriteFile(other.File(fetchMark), []byte("r9"), 0o644))
	_, _, err = other.Fetch(context.Background(), store, "r1", false)
	assert.ErrorIs(t, err, ErrNotEmpty, "the unfinished fetch of another run is not ours to clear")
}

// TestStatusCountsWhatIsLeft follows a run of testPlan's one intent: pairs
// pending, then one given up, then none left; an intent whose every pair
// was given up could not be benched.
func TestStatusCountsWhatIsLeft(t *testing.T) {
	plan := testPlan()
	plan.Intents = plan.Intents[:1]
	planned := len(plan.Intents[0].Pairs)
	c := NewStatusCounter(plan)
	st := c.Status()
	assert.Equal(t, Status{Planned: planned, Pending: planned}, st)
	assert.False(t, st.Finished())

	abort := func(pair, attempt int) {
		r := runRows(2 * pair)[0]
		r.Outcome, r.Attempt = pairbench.Aborted, attempt
		c.Add(&r)
	}
	for p := range planned {
		abort(p, 1)
	}
	assert.Equal(t, planned, c.Status().Pending, "one aborted attempt: every pair runs again")
	for p := range planned {
		abort(p, 2)
	}
	st = c.Status()
	assert.True(t, st.Finished())
	assert.Equal(t, planned, st.GivenUp)
	assert.Equal(t, []string{"books-cheapest"}, st.NotBenched)
	assert.True(t, strings.HasPrefix(plan.Intents[0].ID, "books"))
}

// rowsOf reads a rows file of d, failing on a partial line.
func rowsOf(t *testing.T, d RunDir, rel string) []pairbench.Row {
	t.Helper()
	rows, read, err := readAllRows(d, RowQuery{File: rel})
	require.NoError(t, err)
	assert.Empty(t, read.Warnings, "reading %s", rel)
	return rows
}

// readAllRows reads the rows q selects into memory.
func readAllRows(d RunDir, q RowQuery) ([]pairbench.Row, RowsRead, error) {
	var rows []pairbench.Row
	read, err := d.ScanRows(q, func(r *pairbench.Row) { rows = append(rows, *r) })
	return rows, read, err
}

// TestStoredPeerRows: a shard reads the rows its peers stored, not its
// own, and a peer that stored nothing yet has none.
func TestStoredPeerRows(t *testing.T) {
	store, err := artifacts.NewLocal(t.TempDir())
	require.NoError(t, err)
	storeRun(t, store, map[string][]byte{PlanFile: planJSON(t, testPlan()),
		RowsFileOf(1): encodeRows(t, runRows(0)),
		RowsFileOf(2): encodeRows(t, runRows(1, 2)),
	})
	rows, err := StoredPeerRows(t.Context(), store, "r1", 3, 1)
	require.NoError(t, err)
	require.Len(t, rows, 2, "shard 2's rows; shard 3 stored none yet, shard 1's are the reader's own")
	assert.Equal(t, runRows(1, 2)[0].Pair, rows[0].Pair)

	require.NoError(t, store.Put(t.Context(), StoreKey("r1", RowsFileOf(3)), strings.NewReader("not a row\n")))
	_, err = StoredPeerRows(t.Context(), store, "r1", 3, 1)
	assert.Error(t, err, "a peer's unreadable rows are an error, not none")
}
