package heldir

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

func TestCleanRemovesOnlyUnheldDirectories(t *testing.T) {
	root := t.TempDir()
	held, hold, err := Make(root, "x-")
	require.NoError(t, err)
	defer hold.Close()
	assert.True(t, strings.HasPrefix(filepath.Base(held), "x-"), "made under its pattern: %s", held)
	abandoned, h2, err := Make(root, "x-")
	require.NoError(t, err)
	require.NoError(t, h2.Close()) // its holder "died"
	young, h3, err := Make(root, "x-")
	require.NoError(t, err)
	require.NoError(t, h3.Close()) // died a moment after making it
	other, err := os.MkdirTemp(root, "y-")
	require.NoError(t, err)
	// One still being made: hidden, not locked yet.
	making, err := os.MkdirTemp(root, hiddenPrefix+"x-")
	require.NoError(t, err)

	past := time.Now().Add(-time.Minute)
	for _, d := range []string{held, abandoned, other} {
		require.NoError(t, os.Chtimes(d, past, past))
	}
	removed, err := Clean(root, time.Now().Add(-10*time.Second), nil, "x-*")
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{abandoned, young}, removed, "an unheld directory of Make's is abandoned, however young")
	assert.DirExists(t, held, "a held directory stays")
	assert.DirExists(t, making, "one still being made stays until the cutoff")
	assert.DirExists(t, other, "only matching names are considered")

	require.NoError(t, os.Chtimes(making, past, past))
	removed, err = Clean(root, time.Now().Add(-10*time.Second), nil, "x-*")
	require.NoError(t, err)
	assert.Equal(t, []string{making}, removed, "a hidden one its maker never finished, once old")
}

// TestHoldEndsWithItsProcess shows that a killed holder releases its
// directories: a child process holds one and is killed.
func TestHoldEndsWithItsProcess(t *testing.T) {
	root := t.TempDir()
	dir, err := os.MkdirTemp(root, "x-")
	require.NoError(t, err)
	if _, err := exec.LookPath("flock"); err != nil {
		t.Fatal("flock(1) is not installed (util-linux)")
	}
	// --no-fork: flock becomes the sleep, so killing it ends the holder.
	cmd := exec.Command("flock", "--no-fork", "-x", dir, "sleep", "30")
	require.NoError(t, cmd.Start())
	past := time.Now().Add(-time.Minute)
	require.NoError(t, os.Chtimes(dir, past, past))
	require.Eventually(t, func() bool {
		f, err := lock(dir, unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			f.Close() // not held yet
		}
		return err != nil
	}, 5*time.Second, 20*time.Millisecond, "the child holds the directory")
	removed, err := Clean(root, time.Now(), nil, "x-*")
	require.NoError(t, err)
	assert.Empty(t, removed, "held by a live process")

	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait()
	removed, err = Clean(root, time.Now(), nil, "x-*")
	require.NoError(t, err)
	assert.Equal(t, []string{filepath.Clean(dir)}, removed)
}
