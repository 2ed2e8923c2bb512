package local

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench/browser/internal/testsite"
	"github.com/pairbench/pairbench/internal/sandboxtest"
	"github.com/pairbench/pairbench/runner"
)

// profiles lists the per-browser directories (each browser's sandbox,
// whose home is its profile) under dir.
func profiles(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "pairbench-sandbox-*"))
	require.NoError(t, err)
	return m
}

// waitProfiles waits (up to testsite.Patience) until dir holds n profile directories.
func waitProfiles(t *testing.T, dir string, n int) {
	t.Helper()
	require.Eventually(t, func() bool { return len(profiles(t, dir)) == n }, testsite.Patience, 20*time.Millisecond,
		"want %d profile directories in %s", n, dir)
}

// TestSparesAreFreshAndHandedOutOnce takes two browsers from a provider
// keeping one spare: each is its own Chromium and profile, the next spare
// starts only once the taker's agent runs (or it closes its browser), both
// load pages, and closing the provider stops only the spare.
func TestSparesAreFreshAndHandedOutOnce(t *testing.T) {
	site := testsite.New(t)
	p := newProvider(t, site, func(c *Config) { c.Spares = 1 })
	dir := p.cfg.TempDir
	ctx := t.Context()

	b1, err := p.Open(ctx, runner.BrowserSpec{})
	require.NoError(t, err)
	time.Sleep(500 * time.Millisecond) // a spare started now would have its profile by then
	assert.Len(t, profiles(t, dir), 1, "no spare may start while the taker's agent starts")
	b1.(runner.Prestarter).AgentRunning()
	waitProfiles(t, dir, 2) // b1 and the next spare
	b2, err := p.Open(ctx, runner.BrowserSpec{})
	require.NoError(t, err)
	assert.NotEqual(t, b1.DevTools(), b2.DevTools(), "a spare is handed out once")
	require.NoError(t, b2.Close(ctx)) // closing counts as the agent running
	waitProfiles(t, dir, 2)           // b1 and the next spare
	b2, err = p.Open(ctx, runner.BrowserSpec{})
	require.NoError(t, err)
	b2.(runner.Prestarter).AgentRunning()
	waitProfiles(t, dir, 3)

	require.NoError(t, p.Close())
	waitProfiles(t, dir, 2) // the spare is gone, b1 and b2 live on
	for _, b := range []runner.Browser{b1, b2} {
		info, err := b.Load(ctx, "http://books.test/")
		require.NoError(t, err)
		assert.Equal(t, "http://books.test/", info.URL)
		require.NoError(t, b.Close(ctx))
	}
	assert.Empty(t, profiles(t, dir))
	_, err = p.Open(ctx, runner.BrowserSpec{})
	assert.Error(t, err, "a closed provider opens nothing")
}

// TestSpareLivesAsLongAsItsCaller: a handed-out spare is closed when the
// context of the Open that took it ends, like any browser.
func TestSpareLivesAsLongAsItsCaller(t *testing.T) {
	site := testsite.New(t)
	p := newProvider(t, site, func(c *Config) { c.Spares = 1 })
	t.Cleanup(func() { p.Close() })
	ctx, cancel := context.WithCancel(t.Context())
	b, err := p.Open(ctx, runner.BrowserSpec{})
	require.NoError(t, err)
	profile := browserDir(b.(*Browser))
	cancel()
	require.Eventually(t, func() bool {
		_, err := os.Stat(profile)
		return os.IsNotExist(err)
	}, testsite.Patience, 20*time.Millisecond, "the browser outlived its caller's context")
}

// TestDeadSpareIsSkipped kills the waiting spare's Chromium: Open must hand
// out the next one, which works.
func TestDeadSpareIsSkipped(t *testing.T) {
	site := testsite.New(t)
	p := newProvider(t, site, func(c *Config) { c.Spares = 1 })
	t.Cleanup(func() { p.Close() })
	ctx := t.Context()
	b, err := p.Open(ctx, runner.BrowserSpec{})
	require.NoError(t, err)
	defer b.Close(ctx)
	b.(runner.Prestarter).AgentRunning()

	var spare *Browser
	require.Eventually(t, func() bool {
		select {
		case o := <-p.ready:
			spare = o.b
			return true
		default:
			return false
		}
	}, testsite.Patience, 20*time.Millisecond)
	require.NotNil(t, spare)
	require.NoError(t, syscall.Kill(chromiumMain(t, spare), syscall.SIGKILL))
	<-spare.proc.exited
	p.ready <- opened{b: spare} // back in line, dead

	next, err := p.Open(ctx, runner.BrowserSpec{})
	require.NoError(t, err)
	defer next.Close(ctx)
	assert.NotEqual(t, spare.DevTools(), next.DevTools())
	_, err = next.Load(ctx, "http://books.test/")
	require.NoError(t, err)
	_, err = os.Stat(browserDir(spare))
	assert.True(t, os.IsNotExist(err), "the dead spare's profile is removed")
}

// TestSpareThatCannotStartIsAnError: with spares, a Chromium that cannot
// start makes Open fail with the reason instead of waiting forever.
func TestSpareThatCannotStartIsAnError(t *testing.T) {
	fake := filepath.Join(sandboxtest.TempDir(t), "chromium")
	require.NoError(t, os.WriteFile(fake, []byte("#!/bin/sh\necho cannot start >&2\nexit 1\n"), 0o755))
	site := testsite.New(t)
	p := newProvider(t, site, func(c *Config) { c.Spares = 1; c.ChromiumPath = fake })
	t.Cleanup(func() { p.Close() })
	ctx, cancel := context.WithTimeout(t.Context(), testsite.Patience)
	defer cancel()
	_, err := p.Open(ctx, runner.BrowserSpec{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "cannot start")
}
