package sandbox

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCleanStaleRemovesOnlyUnheldDirectories: a sandbox and an egress proxy
// in use survive, directories their killed owners left are removed, and an
// unheld directory younger than the cutoff (its creator may be about to lock
// it) is kept.
func TestCleanStaleRemovesOnlyUnheldDirectories(t *testing.T) {
	needBwrap(t)
	root := sharedDir(t)
	sb, err := New(t.Context(), Policy{TempRoot: root})
	require.NoError(t, err)
	defer sb.Close()
	eg, err := NewEgress(t.Context(), EgressConfig{TempDir: root})
	require.NoError(t, err)
	defer eg.Close()

	// What a SIGKILLed runner leaves: the same directories, nobody holding them.
	old := time.Now().Add(-time.Minute)
	var stale []string
	for _, prefix := range []string{agentDirPrefix, egressDirPrefix} {
		dir, err := os.MkdirTemp(root, prefix)
		require.NoError(t, err)
		require.NoError(t, os.MkdirAll(filepath.Join(dir, "home", "pi-agent"), 0o700))
		require.NoError(t, os.Chtimes(dir, old, old))
		stale = append(stale, dir)
	}
	young, err := os.MkdirTemp(root, agentDirPrefix)
	require.NoError(t, err)
	other := filepath.Join(root, "unrelated")
	require.NoError(t, os.Mkdir(other, 0o700))
	require.NoError(t, os.Chtimes(other, old, old))

	// The live ones are old enough too: only their locks protect them.
	hostDir, _ := eg.Mounts()
	live := []string{filepath.Dir(sb.Home()), hostDir}
	for _, d := range live {
		require.NoError(t, os.Chtimes(d, old, old))
	}

	removed, err := CleanStale(root, time.Now().Add(-5*time.Second))
	require.NoError(t, err)
	assert.ElementsMatch(t, stale, removed)
	for _, d := range stale {
		assert.NoDirExists(t, d)
	}
	for _, d := range append(live, young, other) {
		assert.DirExists(t, d)
	}

	// Once closed, nothing of theirs is left to clean.
	require.NoError(t, sb.Close())
	require.NoError(t, eg.Close())
	for _, d := range live {
		assert.NoDirExists(t, d)
	}
	removed, err = CleanStale(root, time.Now().Add(time.Second))
	require.NoError(t, err)
	assert.Equal(t, []string{young}, removed, "the young directory, once past the cutoff")
}
