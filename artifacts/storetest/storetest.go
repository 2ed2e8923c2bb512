// Package storetest is the contract every artifacts.Store adapter must
// satisfy. An adapter's tests call Run with a constructor for fresh, empty
// stores:
//
//	func TestLocal(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) artifacts.Store {
//			s, err := artifacts.NewLocal(t.TempDir())
//			require.NoError(t, err)
//			return s
//		})
//	}
package storetest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench/artifacts"
)

// LargeSize is the size of the object the Large case streams through the
// store: above the S3 adapter's multipart threshold.
const LargeSize = 20 << 20

// Run runs the whole contract as subtests. newStore must return a new store
// that holds no objects and is independent of every other store it returned.
func Run(t *testing.T, newStore func(t *testing.T) artifacts.Store) {
	cases := []struct {
		name string
		fn   func(*testing.T, artifacts.Store)
	}{
		{"PutGet", testPutGet},
		{"Overwrite", testOverwrite},
		{"NotExist", testNotExist},
		{"Stat", testStat},
		{"List", testList},
		{"InvalidKeys", testInvalidKeys},
		{"Delete", testDelete},
		{"Presign", testPresign},
		{"FailedPutPublishesNothing", testFailedPut},
		{"CanceledPut", testCanceledPut},
		{"PutInProgressIsInvisible", testPutInProgress},
		{"ReadersSeeWholeObjects", testWholeObjects},
		{"ConcurrentPuts", testConcurrentPuts},
		{"Large", testLarge},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.fn(t, newStore(t))
		})
	}
}

// put stores data at key and fails the test on error.
func put(t *testing.T, s artifacts.Store, key string, data []byte) {
	t.Helper()
	require.NoError(t, s.Put(t.Context(), key, bytes.NewReader(data)), "Put(%q)", key)
}

// get reads the object at key in full and fails the test on error.
func get(t *testing.T, s artifacts.Store, key string) []byte {
	t.Helper()
	rc, err := s.Get(t.Context(), key)
	require.NoError(t, err, "Get(%q)", key)
	defer rc.Close()
	data, err := io.ReadAll(rc)
	require.NoError(t, err, "reading %q", key)
	return data
}

func keys(infos []artifacts.Info) []string {
	out := make([]string, len(infos))
	for i, in := range infos {
		out[i] = in.Key
	}
	return out
}

func testPutGet(t *testing.T, s artifacts.Store) {
	objects := map[string][]byte{
		"r1/rows.jsonl":                  []byte("{\"a\":1}\n{\"a\":2}\n"),
		"r1/empty":                       {},
		"r1/trials/i/1-control/bin.dat":  {0, 1, 2, 0xff, 0xfe, '\n', 0},
		"r1/trials/i/1-control/ünï cødé": []byte("utf-8 names and spaces"),
	}
	for k, v := range objects {
		put(t, s, k, v)
	}
	for k, v := range objects {
		assert.Equal(t, v, get(t, s, k), "Get(%q)", k)
	}
}

func testOverwrite(t *testing.T, s artifacts.Store) {
	put(t, s, "r/run.json", []byte("a longer first version"))
	put(t, s, "r/run.json", []byte("v2"))
	assert.Equal(t, "v2", string(get(t, s, "r/run.json")))
	list, err := s.List(t.Context(), "")
	require.NoError(t, err)
	assert.Equal(t, []string{"r/run.json"}, keys(list), "an overwrite leaves one object")
}

func testNotExist(t *testing.T, s artifacts.Store) {
	ctx := t.Context()
	put(t, s, "r/present", []byte("x"))
	for _, key := range []string{"r/absent", "absent", "r/present/below"} {
		_, err := s.Get(ctx, key)
		assert.ErrorIs(t, err, artifacts.ErrNotExist, "Get(%q)", key)
		_, err = s.Stat(ctx, key)
		assert.ErrorIs(t, err, artifacts.ErrNotExist, "Stat(%q)", key)
		_, err = s.Presign(ctx, key, time.Minute)
		assert.ErrorIs(t, err, artifacts.ErrNotExist, "Presign(%q)", key)
		ok, err := artifacts.Exists(ctx, s, key)
		assert.NoError(t, err, "Exists(%q)", key)
		assert.False(t, ok, "Exists(%q)", key)
		assert.NoError(t, s.Delete(ctx, key), "Delete(%q) of a missing object", key)
	}
	// A prefix of a key is not an object.
	_, err := s.Stat(ctx, "r")
	assert.ErrorIs(t, err, artifacts.ErrNotExist, `Stat("r") when only "r/present" exists`)
	ok, err := artifacts.Exists(ctx, s, "r/present")
	require.NoError(t, err)
	assert.True(t, ok, "Exists(r/present)")
}

func testStat(t *testing.T, s artifacts.Store) {
	before := time.Now().Add(-2 * time.Second)
	put(t, s, "r/report.json", []byte(`{"ok":true}`))
	after := time.Now().Add(2 * time.Second)
	info, err := s.Stat(t.Context(), "r/report.json")
	require.NoError(t, err)
	assert.Equal(t, "r/report.json", info.Key)
	assert.EqualValues(t, 11, info.Size)
	assert.True(t, info.ModTime.After(before) && info.ModTime.Before(after),
		"ModTime %v; want between %v and %v", info.ModTime, before, after)
}

func testList(t *testing.T, s artifacts.Store) {
	ctx := t.Context()
	all := []string{
		"r1-b/x",
		"r1/report.json",
		"r1/rows.jsonl",
		"r1/run.json",
		"r1/trials/find/1-control/transcript.jsonl",
		"r1/trials/find/1-treatment-2/transcript.jsonl",
		"r1/trials/find/10-control/transcript.jsonl",
		"r2/rows.jsonl",
	}
	// Put in an order unlike the sorted one.
	for _, i := range []int{5, 2, 7, 0, 3, 6, 1, 4} {
		put(t, s, all[i], []byte(all[i]))
	}
	cases := []struct {
		prefix string
		want   []string
	}{
		{"", all},
		{"r1/", all[1:7]},
		{"r1", all[:7]},
		{"r1/trials/find/1", all[4:7]},
		{"r1/trials/find/1-", all[4:6]},
		{"r1/rows.jsonl", all[2:3]},
		{"r3/", nil},
		{"r1/rows.jsonl/", nil},
	}
	for _, c := range cases {
		got, err := s.List(ctx, c.prefix)
		require.NoError(t, err, "List(%q)", c.prefix)
		assert.Equal(t, c.want, nilIfEmpty(keys(got)), "List(%q)", c.prefix)
		for _, in := range got {
			assert.EqualValues(t, len(in.Key), in.Size, "size of %q", in.Key)
		}
	}
}

func nilIfEmpty(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
}

func testInvalidKeys(t *testing.T, s artifacts.Store) {
	ctx := t.Context()
	bad := []string{
		"",
		"/etc/passwd",
		"../escape",
		"r/../../escape",
		"r/..",
		"r/./x",
		"r//x",
		"r/",
		`r\..\x`,
		`C:\x`,
		".hidden",
		"r/.tmp-123",
		"nul\x00byte",
		"new\nline",
		"bad\xffutf8",
	}
	for _, key := range bad {
		err := s.Put(ctx, key, bytes.NewReader([]byte("x")))
		assert.ErrorIs(t, err, artifacts.ErrInvalidKey, "Put(%q)", key)
		_, err = s.Get(ctx, key)
		assert.ErrorIs(t, err, artifacts.ErrInvalidKey, "Get(%q)", key)
		_, err = s.Stat(ctx, key)
		assert.ErrorIs(t, err, artifacts.ErrInvalidKey, "Stat(%q)", key)
		err = s.Delete(ctx, key)
		assert.ErrorIs(t, err, artifacts.ErrInvalidKey, "Delete(%q)", key)
		_, err = s.Presign(ctx, key, time.Minute)
		assert.ErrorIs(t, err, artifacts.ErrInvalidKey, "Presign(%q)", key)
	}
	for _, prefix := range []string{"/", "../", "r/../", "r//", `r\`, ".tmp"} {
		_, err := s.List(ctx, prefix)
		assert.ErrorIs(t, err, artifacts.ErrInvalidKey, "List(%q)", prefix)
	}
	list, err := s.List(ctx, "")
	require.NoError(t, err)
	assert.Empty(t, list, "refused keys must store nothing")
}

func testDelete(t *testing.T, s artifacts.Store) {
	ctx := t.Context()
	put(t, s, "r/trials/a/1-control/transcript.jsonl", []byte("a"))
	put(t, s, "r/trials/a/1-treatment/transcript.jsonl", []byte("b"))
	require.NoError(t, s.Delete(ctx, "r/trials/a/1-control/transcript.jsonl"))
	_, err := s.Stat(ctx, "r/trials/a/1-control/transcript.jsonl")
	assert.ErrorIs(t, err, artifacts.ErrNotExist)
	list, err := s.List(ctx, "r/")
	require.NoError(t, err)
	assert.Equal(t, []string{"r/trials/a/1-treatment/transcript.jsonl"}, keys(list))
	// The key can be written again after a delete.
	put(t, s, "r/trials/a/1-control/transcript.jsonl", []byte("c"))
	assert.Equal(t, "c", string(get(t, s, "r/trials/a/1-control/transcript.jsonl")))
}

func testPresign(t *testing.T, s artifacts.Store) {
	ctx := t.Context()
	body := []byte("<!doctype html><title>report</title>")
	put(t, s, "r/report.html", body)
	link, err := s.Presign(ctx, "r/report.html", time.Minute)
	require.NoError(t, err)
	got, err := Fetch(ctx, link)
	require.NoError(t, err, "fetching presigned %s", link)
	assert.Equal(t, body, got)

	for _, ttl := range []time.Duration{0, -time.Second, artifacts.MaxPresignTTL + time.Second} {
		_, err := s.Presign(ctx, "r/report.html", ttl)
		assert.Error(t, err, "Presign with ttl %v", ttl)
	}
}

// Fetch reads a URL returned by Presign: http(s) with a plain GET, file://
// from the file system.
func Fetch(ctx context.Context, link string) ([]byte, error) {
	u, err := url.Parse(link)
	if err != nil {
		return nil, err
	}
	switch u.Scheme {
	case "file":
		return os.ReadFile(u.Path)
	case "http", "https":
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, link, nil)
		if err != nil {
			return nil, err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		data, err := io.ReadAll(resp.Body)
		if err != nil {
			return nil, err
		}
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("GET %s: %s: %s", link, resp.Status, data)
		}
		return data, nil
	default:
		return nil, fmt.Errorf("unexpected scheme in %q", link)
	}
}

// errBroken is what failingReader returns once its data runs out.
var errBroken = errors.New("storetest: source broke")

// failingReader yields n bytes, then errBroken.
type failingReader struct{ n int }

func (f *failingReader) Read(p []byte) (int, error) {
	if f.n == 0 {
		return 0, errBroken
	}
	k := min(len(p), f.n)
	clear(p[:k])
	f.n -= k
	return k, nil
}

func testFailedPut(t *testing.T, s artifacts.Store) {
	ctx := t.Context()
	put(t, s, "r/rows.jsonl", []byte("old"))
	for _, size := range []int{1000, LargeSize} { // in one request, and in parts
		err := s.Put(ctx, "r/rows.jsonl", &failingReader{n: size})
		assert.ErrorIs(t, err, errBroken, "Put from a reader that breaks after %d bytes", size)
		assert.Equal(t, "old", string(get(t, s, "r/rows.jsonl")), "a failed Put keeps the old object")

		err = s.Put(ctx, "r/new", &failingReader{n: size})
		assert.ErrorIs(t, err, errBroken)
		_, err = s.Stat(ctx, "r/new")
		assert.ErrorIs(t, err, artifacts.ErrNotExist, "a failed Put of a new key publishes nothing")
	}
	list, err := s.List(ctx, "")
	require.NoError(t, err)
	assert.Equal(t, []string{"r/rows.jsonl"}, keys(list))
}

func testCanceledPut(t *testing.T, s artifacts.Store) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	err := s.Put(ctx, "r/x", bytes.NewReader([]byte("data")))
	assert.ErrorIs(t, err, context.Canceled)
	_, err = s.Stat(t.Context(), "r/x")
	assert.ErrorIs(t, err, artifacts.ErrNotExist)
}

func testPutInProgress(t *testing.T, s artifacts.Store) {
	ctx := t.Context()
	put(t, s, "r/run.json", []byte("old"))
	for _, key := range []string{"r/run.json", "r/fresh.json"} {
		pr, pw := io.Pipe()
		done := make(chan error, 1)
		go func() { done <- s.Put(ctx, key, pr) }()
		_, err := pw.Write([]byte("first half, "))
		require.NoError(t, err)

		// The writer is blocked mid-object: nothing of it may show.
		list, err := s.List(ctx, "")
		require.NoError(t, err)
		if key == "r/run.json" {
			assert.Equal(t, "old", string(get(t, s, key)))
			assert.Equal(t, []string{"r/run.json"}, keys(list))
		} else {
			_, err := s.Stat(ctx, key)
			assert.ErrorIs(t, err, artifacts.ErrNotExist, "Stat of a key being written")
			assert.NotContains(t, keys(list), key)
		}

		_, err = pw.Write([]byte("second half"))
		require.NoError(t, err)
		require.NoError(t, pw.Close())
		require.NoError(t, <-done)
		assert.Equal(t, "first half, second half", string(get(t, s, key)))
	}
}

func testWholeObjects(t *testing.T, s artifacts.Store) {
	const size, versions, readers = 1 << 20, 8, 2
	ctx := t.Context()
	put(t, s, "r/blob", bytes.Repeat([]byte{0}, size))

	var wg sync.WaitGroup
	stop := make(chan struct{})
	problems := make(chan string, readers)
	for range readers {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				rc, err := s.Get(ctx, "r/blob")
				if err != nil {
					problems <- err.Error()
					return
				}
				data, err := io.ReadAll(rc)
				rc.Close()
				if err != nil {
					problems <- err.Error()
					return
				}
				if len(data) != size || bytes.Count(data, data[:1]) != size {
					problems <- fmt.Sprintf("read %d bytes not all equal to %d; want %d equal bytes", len(data), data[0], size)
					return
				}
			}
		})
	}
	for v := 1; v <= versions; v++ {
		put(t, s, "r/blob", bytes.Repeat([]byte{byte(v)}, size))
	}
	close(stop)
	wg.Wait()
	close(problems)
	for p := range problems {
		t.Error(p)
	}
	assert.Equal(t, bytes.Repeat([]byte{versions}, size), get(t, s, "r/blob"))
}

func testConcurrentPuts(t *testing.T, s artifacts.Store) {
	const n = 8
	var wg sync.WaitGroup
	errs := make([]error, n)
	var want []string
	for i := range n {
		key := fmt.Sprintf("r/trials/i/%d-control/transcript.jsonl", i)
		want = append(want, key)
		wg.Go(func() { errs[i] = s.Put(t.Context(), key, bytes.NewReader([]byte(key))) })
	}
	wg.Wait()
	for i, err := range errs {
		assert.NoError(t, err, "Put %d", i)
	}
	list, err := s.List(t.Context(), "r/")
	require.NoError(t, err)
	slices.Sort(want)
	assert.Equal(t, want, keys(list))
	for _, k := range want {
		assert.Equal(t, k, string(get(t, s, k)))
	}
}

// onlyReader hides every method but Read, so the store cannot learn the size
// in advance or seek.
type onlyReader struct{ r io.Reader }

func (o onlyReader) Read(p []byte) (int, error) { return o.r.Read(p) }

func testLarge(t *testing.T, s artifacts.Store) {
	src := make([]byte, LargeSize)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range src {
		src[i] = byte(rng.Uint32())
	}
	want := sha256.Sum256(src)
	require.NoError(t, s.Put(t.Context(), "r/large.bin", onlyReader{bytes.NewReader(src)}))

	info, err := s.Stat(t.Context(), "r/large.bin")
	require.NoError(t, err)
	assert.EqualValues(t, LargeSize, info.Size)
	rc, err := s.Get(t.Context(), "r/large.bin")
	require.NoError(t, err)
	defer rc.Close()
	h := sha256.New()
	n, err := io.Copy(h, rc)
	require.NoError(t, err)
	assert.EqualValues(t, LargeSize, n)
	assert.Equal(t, want[:], h.Sum(nil), "sha256 of the object read back")
}
