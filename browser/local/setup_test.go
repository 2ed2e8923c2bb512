package local

import (
	"context"
	"errors"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench/browser/internal/testsite"
	"github.com/pairbench/pairbench/internal/sandboxtest"
	"github.com/pairbench/pairbench/runner"
)

func TestMissingChromiumFailsClearly(t *testing.T) {
	_, err := New(Config{ChromiumPath: "/nonexistent/chromium"})
	require.Error(t, err)
	assert.ErrorIs(t, err, os.ErrNotExist)
	assert.Contains(t, err.Error(), "/nonexistent/chromium")

	// An executable that is not Chromium never listens.
	p, err := New(Config{ChromiumPath: "/bin/true", TempDir: sandboxtest.TempDir(t)})
	require.NoError(t, err)
	_, err = p.Open(context.Background(), runner.BrowserSpec{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "chromium exited before it answered")
}

func TestFlagsThatUndoTheConfinementAreRefused(t *testing.T) {
	for _, f := range []string{"--no-sandbox", "--proxy-server=direct://", "--remote-debugging-port=9333", "--user-data-dir=/home/x", "--disable-web-security"} {
		_, err := New(Config{Flags: []string{f}})
		assert.ErrorContains(t, err, "would undo the browser's confinement", f)
	}
	_, err := New(Config{Flags: []string{"--lang=de"}})
	assert.NoError(t, err)
}

func TestProfilesAndStealthAreUnsupported(t *testing.T) {
	site := testsite.New(t)
	p := newProvider(t, site)
	_, err := p.Open(context.Background(), runner.BrowserSpec{Profile: "bench-shop"})
	assert.True(t, errors.Is(err, ErrUnsupported), "profile: %v", err)
	_, err = p.Open(context.Background(), runner.BrowserSpec{Stealth: true})
	assert.True(t, errors.Is(err, ErrUnsupported), "stealth: %v", err)
}
