package local

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCleanStaleKeepsLiveProfiles: a running browser's profile survives
// CleanStale however old it looks; a profile nobody holds (what a killed
// runner leaves) is removed, unless it is younger than the cutoff.
func TestCleanStaleKeepsLiveProfiles(t *testing.T) {
	site := newTestSite(t)
	root := t.TempDir()
	p := newProvider(t, site, func(c *Config) { c.TempDir = root })
	b := openBrowser(t, p)
	live := b.proc.dir
	require.DirExists(t, live)

	old := time.Now().Add(-time.Minute)
	stale, err := os.MkdirTemp(root, profilePrefix)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(stale, "Local State"), []byte("{}"), 0o600))
	young, err := os.MkdirTemp(root, profilePrefix)
	require.NoError(t, err)
	for _, d := range []string{stale, live} {
		require.NoError(t, os.Chtimes(d, old, old))
	}

	removed, err := CleanStale(root, time.Now().Add(-5*time.Second))
	require.NoError(t, err)
	assert.Equal(t, []string{stale}, removed)
	assert.NoDirExists(t, stale)
	assert.DirExists(t, live, "the running browser's profile")
	assert.DirExists(t, young)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, b.Close(ctx))
	assert.NoDirExists(t, live)
}
