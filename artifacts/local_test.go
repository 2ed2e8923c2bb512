package artifacts_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench/artifacts"
	"github.com/pairbench/pairbench/artifacts/storetest"
)

func newLocal(t *testing.T, dir string) *artifacts.Local {
	t.Helper()
	s, err := artifacts.NewLocal(dir)
	require.NoError(t, err)
	return s
}

func TestLocalContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) artifacts.Store {
		return newLocal(t, t.TempDir())
	})
}

func TestLocalLayoutIsTheKeyTree(t *testing.T) {
	root := t.TempDir()
	s := newLocal(t, filepath.Join(root, "store")) // created on demand
	require.NoError(t, s.Put(t.Context(), "r1/trials/i/1-control/transcript.jsonl", strings.NewReader("line\n")))

	data, err := os.ReadFile(filepath.Join(root, "store", "r1", "trials", "i", "1-control", "transcript.jsonl"))
	require.NoError(t, err)
	assert.Equal(t, "line\n", string(data))
}

func TestLocalRefusedKeysWriteNothingOutside(t *testing.T) {
	parent := t.TempDir()
	s := newLocal(t, filepath.Join(parent, "store"))
	for _, key := range []string{"../outside", "a/../../outside", "/tmp/outside", `..\outside`} {
		err := s.Put(t.Context(), key, strings.NewReader("x"))
		require.ErrorIs(t, err, artifacts.ErrInvalidKey, "Put(%q)", key)
	}
	var found []string
	require.NoError(t, filepath.WalkDir(parent, func(p string, d fs.DirEntry, err error) error {
		if !d.IsDir() {
			found = append(found, p)
		}
		return err
	}))
	assert.Empty(t, found, "no file may be written for a refused key")
}

func TestLocalFailedPutLeavesNoTemporaryFile(t *testing.T) {
	root := t.TempDir()
	s := newLocal(t, root)
	err := s.Put(t.Context(), "r/rows.jsonl", &brokenReader{})
	require.Error(t, err)

	var found []string
	require.NoError(t, filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if !d.IsDir() {
			found = append(found, p)
		}
		return err
	}))
	assert.Empty(t, found)
}

func TestLocalListSkipsFilesBeingWritten(t *testing.T) {
	root := t.TempDir()
	s := newLocal(t, root)
	require.NoError(t, s.Put(t.Context(), "r/a", strings.NewReader("a")))
	// What a Put in flight looks like on disk.
	require.NoError(t, os.WriteFile(filepath.Join(root, "r", ".tmp-123"), []byte("half"), 0o644))

	list, err := s.List(t.Context(), "")
	require.NoError(t, err)
	require.Len(t, list, 1)
	assert.Equal(t, "r/a", list[0].Key)
}

func TestLocalDeleteRemovesEmptyDirectories(t *testing.T) {
	root := t.TempDir()
	s := newLocal(t, root)
	require.NoError(t, s.Put(t.Context(), "r/trials/i/1-control/t.jsonl", strings.NewReader("x")))
	require.NoError(t, s.Put(t.Context(), "r/rows.jsonl", strings.NewReader("x")))
	require.NoError(t, s.Delete(t.Context(), "r/trials/i/1-control/t.jsonl"))

	assert.NoDirExists(t, filepath.Join(root, "r", "trials"))
	assert.FileExists(t, filepath.Join(root, "r", "rows.jsonl"))
	assert.DirExists(t, root)
}

func TestLocalPresignIsAFileURL(t *testing.T) {
	root := t.TempDir()
	s := newLocal(t, root)
	require.NoError(t, s.Put(t.Context(), "r/report.html", bytes.NewReader([]byte("<p>hi"))))
	link, err := s.Presign(t.Context(), "r/report.html", time.Hour)
	require.NoError(t, err)
	u, err := url.Parse(link)
	require.NoError(t, err)
	assert.Equal(t, "file", u.Scheme)
	assert.Equal(t, filepath.Join(root, "r", "report.html"), filepath.FromSlash(u.Path))
}

// brokenReader fails at once.
type brokenReader struct{}

func (brokenReader) Read([]byte) (int, error) { return 0, os.ErrClosed }

// putterArg makes the test binary (see TestMain) a writer of its own: it
// puts its stdin into the directory store ROOT at KEY and exits 0 once
// stored.
const putterArg = "__artifacts-putter"

func runPutter(args []string) int {
	if len(args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: __artifacts-putter ROOT KEY")
		return 2
	}
	s, err := artifacts.NewLocal(args[0])
	if err == nil {
		err = s.Put(context.Background(), args[1], os.Stdin)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// startPutter starts a writer process putting key into the store at root,
// feeds it part of the file and waits until its temporary file holds that
// part, which it returns (with the writer and its stdin).
func startPutter(t *testing.T, root, key string, known map[string]bool) (*exec.Cmd, io.WriteCloser, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], putterArg, root, key)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	_, err = in.Write([]byte("half"))
	require.NoError(t, err)
	var tmp string
	require.Eventually(t, func() bool {
		found, _ := filepath.Glob(filepath.Join(root, filepath.Dir(key), ".tmp-*"))
		for _, f := range found {
			if fi, err := os.Stat(f); !known[f] && err == nil && fi.Size() == 4 {
				tmp = f
				return true
			}
		}
		return false
	}, 10*time.Second, 10*time.Millisecond, "the writer of %s has its temporary file", key)
	known[tmp] = true
	return cmd, in, tmp
}

// TestLocalPutRemovesWhatAKilledWriterLeft: a writer process SIGKILLed in
// the middle of a Put leaves its temporary file; the next Put into the same
// directory removes it at once, however young, and leaves alone the
// temporary file of a live writer (another process, as slow as it likes).
func TestLocalPutRemovesWhatAKilledWriterLeft(t *testing.T) {
	root := t.TempDir()
	known := map[string]bool{}
	killed, _, left := startPutter(t, root, "r/a.json", known)
	live, liveIn, held := startPutter(t, root, "r/b.json", known)
	require.NoError(t, killed.Process.Kill())
	killed.Wait()
	require.FileExists(t, left, "a killed writer leaves its temporary file")

	s := newLocal(t, root)
	require.NoError(t, s.Put(t.Context(), "r/c.json", strings.NewReader("c")))
	assert.NoFileExists(t, left, "the next Put removed what the killed writer left")
	assert.FileExists(t, held, "a live writer's temporary file is left alone")

	// The live writer finishes its Put unharmed.
	_, err := liveIn.Write([]byte(" and the rest"))
	require.NoError(t, err)
	require.NoError(t, liveIn.Close())
	require.NoError(t, live.Wait())
	b, err := os.ReadFile(filepath.Join(root, "r", "b.json"))
	require.NoError(t, err)
	assert.Equal(t, "half and the rest", string(b))
	assert.NoFileExists(t, held)
}

// TestLocalListRemovesWhatAKilledWriterLeft: a resumed run's syncer lists
// its run and may put nothing beside a killed writer's temporary file
// again; the listing itself removes the file, and leaves a live writer's.
func TestLocalListRemovesWhatAKilledWriterLeft(t *testing.T) {
	root := t.TempDir()
	known := map[string]bool{}
	killed, _, left := startPutter(t, root, "r/trials/a.json", known)
	live, liveIn, held := startPutter(t, root, "r/trials/b.json", known)
	require.NoError(t, killed.Process.Kill())
	killed.Wait()

	s := newLocal(t, root)
	_, err := s.List(t.Context(), "r/")
	require.NoError(t, err)
	assert.NoFileExists(t, left, "listing the run removed what the killed writer left")
	assert.FileExists(t, held, "a live writer's temporary file is left alone")
	require.NoError(t, liveIn.Close())
	require.NoError(t, live.Wait())
}

// TestLocalPutsBesideACleaner: Puts into one directory while listings
// remove every unheld temporary file as fast as they can. A cleaner may
// take a writer's file in the moment between its creation and its lock;
// the writer must notice and start again, so every Put still succeeds with
// its own bytes and nothing temporary is left.
func TestLocalPutsBesideACleaner(t *testing.T) {
	root := t.TempDir()
	s := newLocal(t, root)
	stop := make(chan struct{})
	cleaned := make(chan struct{})
	go func() {
		defer close(cleaned)
		for {
			select {
			case <-stop:
				return
			default:
				s.List(t.Context(), "r/")
			}
		}
	}()
	var wg sync.WaitGroup
	errs := make(chan error, 200)
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				key := fmt.Sprintf("r/%d-%d.json", w, i)
				errs <- s.Put(t.Context(), key, strings.NewReader(key))
			}
		}()
	}
	wg.Wait()
	close(stop)
	<-cleaned
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	for w := range 4 {
		for i := range 50 {
			key := fmt.Sprintf("r/%d-%d.json", w, i)
			b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(key)))
			require.NoError(t, err)
			require.Equal(t, key, string(b))
		}
	}
	left, _ := filepath.Glob(filepath.Join(root, "r", ".tmp-*"))
	assert.Empty(t, left)
}
