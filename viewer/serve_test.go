package viewer_test

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench/viewer"
)

func TestCheckLoopback(t *testing.T) {
	for _, addr := range []string{"127.0.0.1:0", "[::1]:8080", "127.0.0.2:80"} {
		assert.NoError(t, viewer.CheckLoopback(addr), addr)
	}
	for _, addr := range []string{"0.0.0.0:0", "192.0.2.1:8080", ":8080", "localhost:0", "127.0.0.1"} {
		assert.Error(t, viewer.CheckLoopback(addr), addr)
	}
}

// TestServeUntilTheContextEnds serves a run on a free loopback port, reads
// its run page at the URL ready was given, and stops cleanly when the
// context ends.
func TestServeUntilTheContextEnds(t *testing.T) {
	run := fakeRun{intents: 1, pairs: 2}.write(t, t.TempDir())
	ctx, cancel := context.WithCancel(t.Context())
	urls := make(chan string, 1)
	done := make(chan error, 1)
	go func() { done <- viewer.Serve(ctx, run.Path, "127.0.0.1:0", func(u string) { urls <- u }) }()

	var url string
	select {
	case url = <-urls:
	case err := <-done:
		t.Fatalf("Serve ended before it listened: %v", err)
	}
	assert.Regexp(t, `^http://127\.0\.0\.1:\d+/report\.html$`, url)
	resp, err := http.Get(url)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Contains(t, string(body), "<html")

	cancel()
	select {
	case err := <-done:
		assert.NoError(t, err, "ending the context stops it cleanly")
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not stop")
	}
	_, err = http.Get(url)
	assert.Error(t, err, "nothing listens after Serve returned")
}

func TestServeRefusesWhatItCannotServe(t *testing.T) {
	never := func(string) { t.Error("ready called") }
	assert.ErrorContains(t, viewer.Serve(t.Context(), t.TempDir(), "127.0.0.1:0", never), "no report.html")
	run := fakeRun{intents: 1, pairs: 1}.write(t, t.TempDir())
	assert.ErrorContains(t, viewer.Serve(t.Context(), run.Path, "0.0.0.0:0", never), "loopback")
}

// TestOpenInBrowser hands the URL to the desktop's xdg-open, and says so
// when there is none.
func TestOpenInBrowser(t *testing.T) {
	bin, got := t.TempDir(), filepath.Join(t.TempDir(), "opened")
	script := "#!/bin/sh\nprintf %s \"$1\" > " + got + "\n"
	require.NoError(t, os.WriteFile(filepath.Join(bin, "xdg-open"), []byte(script), 0o755))
	t.Setenv("PATH", bin)
	require.NoError(t, viewer.OpenInBrowser("http://127.0.0.1:1/report.html"))
	require.Eventually(t, func() bool {
		b, _ := os.ReadFile(got)
		return string(b) == "http://127.0.0.1:1/report.html"
	}, 10*time.Second, 10*time.Millisecond)

	t.Setenv("PATH", t.TempDir())
	assert.ErrorContains(t, viewer.OpenInBrowser("http://127.0.0.1:1/report.html"), "no xdg-open")
}
