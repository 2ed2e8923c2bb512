package artifacts_test

import (
	"bytes"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
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
