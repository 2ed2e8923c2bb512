package artifacts_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench/artifacts"
)

// recordingStore passes calls to a real store, records the order of Puts
// with the keys the store held when each began, and fails Puts of failKey.
type recordingStore struct {
	artifacts.Store

	mu      sync.Mutex
	puts    []string
	heldAt  map[string][]string // key → keys stored when its Put began
	failKey string
	// failTimes, when above 0, fails only that many Puts of failKey.
	failTimes int
}

var errInjected = errors.New("injected put failure")

func (r *recordingStore) Put(ctx context.Context, key string, rd io.Reader) error {
	list, err := r.Store.List(ctx, "")
	if err != nil {
		return err
	}
	r.mu.Lock()
	r.puts = append(r.puts, key)
	if r.heldAt == nil {
		r.heldAt = map[string][]string{}
	}
	for _, in := range list {
		r.heldAt[key] = append(r.heldAt[key], in.Key)
	}
	fail := key == r.failKey
	if fail && r.failTimes > 0 {
		r.failTimes--
		if r.failTimes == 0 {
			r.failKey = ""
		}
	}
	r.mu.Unlock()
	if fail {
		return errInjected
	}
	return r.Store.Put(ctx, key, rd)
}

func (r *recordingStore) takePuts() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.puts
	r.puts = nil
	return p
}

func writeFile(t *testing.T, dir, rel, data string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(rel))
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte(data), 0o644))
}

func appendFile(t *testing.T, dir, rel, data string) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(dir, filepath.FromSlash(rel)), os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString(data)
	require.NoError(t, err)
	require.NoError(t, f.Close())
}

func storedKeys(t *testing.T, s artifacts.Store) []string {
	t.Helper()
	list, err := s.List(t.Context(), "")
	require.NoError(t, err)
	var out []string
	for _, in := range list {
		out = append(out, in.Key)
	}
	return out
}

// runDir lays out a small finished run.
func runDir(t *testing.T) string {
	dir := t.TempDir()
	writeFile(t, dir, "run.json", `{"seed":1}`)
	writeFile(t, dir, "rows.jsonl", "{\"pair\":1}\n")
	writeFile(t, dir, "trials/find/1-control/transcript.jsonl", "c\n")
	writeFile(t, dir, "trials/find/1-treatment/transcript.jsonl", "t\n")
	writeFile(t, dir, "shards/1/rows.jsonl", "s\n")
	writeFile(t, dir, "report.json", `{"verdict":"faster"}`)
	writeFile(t, dir, "report.md", "# verdict")
	writeFile(t, dir, "report.html", "<h1>verdict</h1>")
	// Never uploaded: a lock, a file being written, a hidden directory.
	writeFile(t, dir, ".lock", "pid 1")
	writeFile(t, dir, "trials/find/2-control/.tmp-transcript", "half")
	writeFile(t, dir, ".cache/x", "x")
	return dir
}

// reportLast is the order a run's report goes last in (rundir.PublishLast).
var reportLast = []string{"report.html", "report.md", "report.json"}

func TestSyncUploadsTheLastFilesLast(t *testing.T) {
	dir := runDir(t)
	store := &recordingStore{Store: newLocal(t, t.TempDir())}
	s, err := artifacts.NewSyncer(store, dir, "run1", reportLast...)
	require.NoError(t, err)

	res, err := s.Sync(t.Context())
	require.NoError(t, err)
	all := []string{
		"run1/report.html", "run1/report.json", "run1/report.md",
		"run1/rows.jsonl", "run1/run.json",
		"run1/shards/1/rows.jsonl",
		"run1/trials/find/1-control/transcript.jsonl",
		"run1/trials/find/1-treatment/transcript.jsonl",
	}
	assert.Equal(t, all, storedKeys(t, store))
	assert.ElementsMatch(t, all, res.Uploaded)
	assert.Zero(t, res.Unchanged)

	puts := store.takePuts()
	require.Len(t, puts, len(all))
	assert.Equal(t, []string{"run1/report.html", "run1/report.md", "run1/report.json"}, puts[len(puts)-3:],
		"the files named last go last, in the order named")
	assert.ElementsMatch(t, slices.DeleteFunc(slices.Clone(all), func(k string) bool { return k == "run1/report.json" }),
		store.heldAt["run1/report.json"], "when report.json is written, everything else is already stored")

	got, err := store.Get(t.Context(), "run1/trials/find/1-treatment/transcript.jsonl")
	require.NoError(t, err)
	data, _ := io.ReadAll(got)
	got.Close()
	assert.Equal(t, "t\n", string(data))
}

func TestSyncKnowsNoFileOfItsOwn(t *testing.T) {
	dir := runDir(t)
	store := &recordingStore{Store: newLocal(t, t.TempDir())}
	s, err := artifacts.NewSyncer(store, dir, "run1", "shards/1/rows.jsonl", "run.json")
	require.NoError(t, err)
	_, err = s.Sync(t.Context())
	require.NoError(t, err)
	puts := store.takePuts()
	require.Len(t, puts, 8)
	assert.Equal(t, []string{"run1/shards/1/rows.jsonl", "run1/run.json"}, puts[6:], "the files named last, in the order named")
	assert.Less(t, slices.Index(puts, "run1/report.json"), 6, "report.json is a file like any other to the syncer")
}

func TestSyncUploadsOnlyWhatChanged(t *testing.T) {
	dir := runDir(t)
	store := &recordingStore{Store: newLocal(t, t.TempDir())}
	s, err := artifacts.NewSyncer(store, dir, "run1")
	require.NoError(t, err)
	_, err = s.Sync(t.Context())
	require.NoError(t, err)
	store.takePuts()

	res, err := s.Sync(t.Context())
	require.NoError(t, err)
	assert.Empty(t, res.Uploaded)
	assert.Equal(t, 8, res.Unchanged)
	assert.Empty(t, store.takePuts(), "nothing changed, nothing uploaded")

	appendFile(t, dir, "rows.jsonl", "{\"pair\":2}\n")
	writeFile(t, dir, "trials/find/2-control/transcript.jsonl", "new trial\n")
	res, err = s.Sync(t.Context())
	require.NoError(t, err)
	assert.Equal(t, []string{"run1/rows.jsonl", "run1/trials/find/2-control/transcript.jsonl"}, res.Uploaded)
	assert.ElementsMatch(t, res.Uploaded, store.takePuts())

	rc, err := store.Get(t.Context(), "run1/rows.jsonl")
	require.NoError(t, err)
	data, _ := io.ReadAll(rc)
	rc.Close()
	assert.Equal(t, "{\"pair\":1}\n{\"pair\":2}\n", string(data))
}

func TestSyncAfterRestartSkipsWhatTheStoreHas(t *testing.T) {
	dir := runDir(t)
	store := &recordingStore{Store: newLocal(t, t.TempDir())}
	first, err := artifacts.NewSyncer(store, dir, "run1")
	require.NoError(t, err)
	_, err = first.Sync(t.Context())
	require.NoError(t, err)
	store.takePuts()

	// The runner dies; meanwhile rows.jsonl grew and run.json was rewritten
	// with the same length.
	appendFile(t, dir, "rows.jsonl", "{\"pair\":2}\n")
	writeFile(t, dir, "run.json", `{"seed":2}`)
	later := time.Now().Add(time.Hour)
	require.NoError(t, os.Chtimes(filepath.Join(dir, "run.json"), later, later))

	second, err := artifacts.NewSyncer(store, dir, "run1")
	require.NoError(t, err)
	res, err := second.Sync(t.Context())
	require.NoError(t, err)
	assert.Equal(t, []string{"run1/rows.jsonl", "run1/run.json"}, res.Uploaded)
	assert.Equal(t, 6, res.Unchanged)
}

func TestSyncFailureHoldsTheReportBack(t *testing.T) {
	dir := runDir(t)
	store := &recordingStore{Store: newLocal(t, t.TempDir()), failKey: "run1/trials/find/1-control/transcript.jsonl"}
	s, err := artifacts.NewSyncer(store, dir, "run1", reportLast...)
	require.NoError(t, err)

	first, err := s.Sync(t.Context())
	require.ErrorIs(t, err, errInjected)
	assert.ElementsMatch(t, first.Uploaded, storedKeys(t, store), "Uploaded lists what was stored")
	for _, k := range storedKeys(t, store) {
		assert.False(t, strings.HasPrefix(k, "run1/report."), "%s uploaded although a trial file failed", k)
	}

	store.mu.Lock()
	store.failKey = ""
	store.mu.Unlock()
	store.takePuts()
	second, err := s.Sync(t.Context())
	require.NoError(t, err)
	assert.Contains(t, second.Uploaded, "run1/trials/find/1-control/transcript.jsonl")
	assert.Equal(t, "run1/report.json", second.Uploaded[len(second.Uploaded)-1])
	assert.Len(t, storedKeys(t, store), 8)
	assert.Len(t, first.Uploaded, 8-len(second.Uploaded), "each file is uploaded once over both Syncs")
	for _, k := range store.takePuts() {
		assert.NotContains(t, first.Uploaded, k, "files uploaded before the failure are not uploaded again")
	}
}

// TestSyncGoesOnPastAFailingFile fails one trial file's every upload: the
// other files all go up, the file is tried three times, and the error
// names it.
func TestSyncGoesOnPastAFailingFile(t *testing.T) {
	dir := runDir(t)
	bad := "run1/trials/find/1-control/transcript.jsonl"
	store := &recordingStore{Store: newLocal(t, t.TempDir()), failKey: bad}
	s, err := artifacts.NewSyncer(store, dir, "run1")
	require.NoError(t, err)
	s.Retry(3, time.Millisecond)
	res, err := s.Sync(t.Context())
	require.ErrorIs(t, err, errInjected)
	assert.Contains(t, err.Error(), bad)
	assert.Len(t, res.Uploaded, 7, "every other file went up")
	assert.NotContains(t, storedKeys(t, store), bad)
	tries := 0
	for _, k := range store.takePuts() {
		if k == bad {
			tries++
		}
	}
	assert.Equal(t, 3, tries)
}

// TestSyncRetriesAFailedUpload fails a file's first two uploads: the third
// try stores it and Sync succeeds.
func TestSyncRetriesAFailedUpload(t *testing.T) {
	dir := runDir(t)
	store := &recordingStore{Store: newLocal(t, t.TempDir()), failKey: "run1/rows.jsonl", failTimes: 2}
	s, err := artifacts.NewSyncer(store, dir, "run1", reportLast...)
	require.NoError(t, err)
	s.Retry(3, time.Millisecond)
	_, err = s.Sync(t.Context())
	require.NoError(t, err)
	assert.Len(t, storedKeys(t, store), 8)
}

// TestSyncNeverOverwritesRowsItDidNotRead guards rows.jsonl: another
// writer replaces the stored copy after this Syncer's upload, and the next
// Sync refuses to overwrite it, leaving the other writer's rows in place.
func TestSyncNeverOverwritesRowsItDidNotRead(t *testing.T) {
	dir := runDir(t)
	store := newLocal(t, t.TempDir())
	s, err := artifacts.NewSyncer(store, dir, "run1")
	require.NoError(t, err)
	s.Guard("rows.jsonl")
	_, err = s.Sync(t.Context())
	require.NoError(t, err)

	theirs := "{\"pair\":1}\n{\"pair\":7}\n{\"pair\":8}\n"
	require.NoError(t, store.Put(t.Context(), "run1/rows.jsonl", strings.NewReader(theirs)))
	appendFile(t, dir, "rows.jsonl", "{\"pair\":2}\n")
	_, err = s.Sync(t.Context())
	require.ErrorIs(t, err, artifacts.ErrChanged)
	rc, err := store.Get(t.Context(), "run1/rows.jsonl")
	require.NoError(t, err)
	got, _ := io.ReadAll(rc)
	rc.Close()
	assert.Equal(t, theirs, string(got), "the other writer's rows stay")

	// A new Syncer (a restarted runner) that read them first may go on.
	fresh, err := artifacts.NewSyncer(store, dir, "run1")
	require.NoError(t, err)
	fresh.Guard("rows.jsonl")
	_, err = fresh.Sync(t.Context())
	assert.NoError(t, err, "its first Sync saw the stored copy it replaces")
}

// TestSyncHoldsTheLastFilesUntilReady uploads a run whose report is not
// final: everything but the report goes up, until the report is final.
func TestSyncHoldsTheLastFilesUntilReady(t *testing.T) {
	dir := runDir(t)
	store := newLocal(t, t.TempDir())
	s, err := artifacts.NewSyncer(store, dir, "run1", reportLast...)
	require.NoError(t, err)
	final := false
	s.HoldLastUntil(func() (bool, error) { return final, nil })
	_, err = s.Sync(t.Context())
	require.NoError(t, err)
	for _, k := range storedKeys(t, store) {
		assert.False(t, strings.HasPrefix(k, "run1/report."), "%s uploaded before the report is final", k)
	}
	assert.Len(t, storedKeys(t, store), 5)
	final = true
	_, err = s.Sync(t.Context())
	require.NoError(t, err)
	assert.Len(t, storedKeys(t, store), 8)
}

func TestSyncToS3(t *testing.T) {
	dir := runDir(t)
	store := s3Store(t, artifacts.S3Config{})
	s, err := artifacts.NewSyncer(store, dir, "run1")
	require.NoError(t, err)
	res, err := s.Sync(t.Context())
	require.NoError(t, err)
	assert.Len(t, res.Uploaded, 8)
	assert.Len(t, storedKeys(t, store), 8)

	// A restarted runner finds everything already in the bucket.
	again, err := artifacts.NewSyncer(store, dir, "run1")
	require.NoError(t, err)
	res, err = again.Sync(t.Context())
	require.NoError(t, err)
	assert.Empty(t, res.Uploaded)
	assert.Equal(t, 8, res.Unchanged)
}

func TestNewSyncerRefusesBadRunIDs(t *testing.T) {
	store := newLocal(t, t.TempDir())
	for _, id := range []string{"", "..", "a/b", ".hidden", `a\b`} {
		_, err := artifacts.NewSyncer(store, t.TempDir(), id)
		assert.ErrorIs(t, err, artifacts.ErrInvalidKey, "run id %q", id)
	}
}

// BenchmarkSyncUnchanged measures a Sync that finds nothing to upload, in a
// run directory of 500 trial files: the cost a runner pays per Sync call
// between trials.
func BenchmarkSyncUnchanged(b *testing.B) {
	dir := b.TempDir()
	for i := range 250 {
		for _, arm := range []string{"control", "treatment"} {
			p := filepath.Join(dir, "trials", "find", fmt.Sprintf("%d-%s", i, arm), "transcript.jsonl")
			require.NoError(b, os.MkdirAll(filepath.Dir(p), 0o755))
			require.NoError(b, os.WriteFile(p, []byte("{}\n"), 0o644))
		}
	}
	store, err := artifacts.NewLocal(b.TempDir())
	require.NoError(b, err)
	s, err := artifacts.NewSyncer(store, dir, "run1")
	require.NoError(b, err)
	_, err = s.Sync(b.Context())
	require.NoError(b, err)
	for b.Loop() {
		res, err := s.Sync(b.Context())
		if err != nil || len(res.Uploaded) != 0 {
			b.Fatalf("Sync = %v, %v; want nothing uploaded", res.Uploaded, err)
		}
	}
}

// TestSyncOnUploadSeesEachUploadUnderWay: the hook sees every key once,
// while the store is taking it (a directory store's temporary file is
// there, the key is not yet), and every upload then completes.
func TestSyncOnUploadSeesEachUploadUnderWay(t *testing.T) {
	dir := runDir(t)
	root := t.TempDir()
	store := newLocal(t, root)
	s, err := artifacts.NewSyncer(store, dir, "run1")
	require.NoError(t, err)
	var mu sync.Mutex
	seen := map[string]int{}
	s.OnUpload(func(key string) {
		mu.Lock()
		defer mu.Unlock()
		seen[key]++
		_, err := store.Stat(t.Context(), key)
		assert.ErrorIs(t, err, artifacts.ErrNotExist, "%s: not stored yet", key)
		tmp, _ := filepath.Glob(filepath.Join(root, filepath.Dir(filepath.FromSlash(key)), ".tmp-*"))
		assert.NotEmpty(t, tmp, "%s: its upload is under way", key)
	})
	res, err := s.Sync(t.Context())
	require.NoError(t, err)
	require.Len(t, res.Uploaded, 8)
	for _, key := range res.Uploaded {
		assert.Equal(t, 1, seen[key], "%s seen once", key)
		_, err := store.Stat(t.Context(), key)
		assert.NoError(t, err, "%s stored", key)
	}
}

// TestSyncUploadsTheFirstFilesBeforeAnyOther: a plan that fails to go up
// keeps every other file back, so a store never holds rows without their
// plan, and the next Sync sends the plan first.
func TestSyncUploadsTheFirstFilesBeforeAnyOther(t *testing.T) {
	dir := runDir(t)
	store := &recordingStore{Store: newLocal(t, t.TempDir()), failKey: "run1/run.json", failTimes: 3}
	s, err := artifacts.NewSyncer(store, dir, "run1")
	require.NoError(t, err)
	s.UploadFirst("run.json")
	_, err = s.Sync(t.Context())
	require.ErrorIs(t, err, errInjected)
	for _, key := range store.takePuts() {
		assert.Equal(t, "run1/run.json", key, "nothing but the plan is tried while the plan fails")
	}

	res, err := s.Sync(t.Context())
	require.NoError(t, err)
	puts := store.takePuts()
	require.NotEmpty(t, puts)
	assert.Equal(t, "run1/run.json", puts[0], "the plan goes up first")
	assert.Len(t, res.Uploaded, 8)
}
