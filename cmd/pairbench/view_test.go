package main

import (
	"context"
	"image/png"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench/internal/clitest"
	"github.com/pairbench/pairbench/rundir"
	"github.com/pairbench/pairbench/viewer"
)

// startView runs view with o on dir until the test ends and returns the
// URL it serves the run page at.
func startView(t *testing.T, o viewOptions, dir string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var out clitest.LockedBuffer
	done := make(chan error, 1)
	go func() { done <- runView(ctx, o, dir, &out, io.Discard) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			assert.NoError(t, err, "view stops cleanly")
		case <-time.After(2 * time.Minute):
			t.Error("view did not stop")
		}
	})
	url := regexp.MustCompile(`http://127\.0\.0\.1:\d+/report\.html`)
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if u := url.FindString(out.String()); u != "" {
			return u
		}
		select {
		case err := <-done:
			t.Fatalf("view ended: %v", err)
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatalf("view printed no URL: %q", out.String())
	return ""
}

func get(t *testing.T, url string) (*http.Response, string) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, string(b)
}

// TestDemoTrialPage benches a real demo pair (pi, the scripted model,
// Chromium, the sandbox) and reads its pair page: both arms, each with its
// end-of-trial screenshot, timeline, tool calls and answer, served by view
// with the site's policy; then view serves the same run fetched from a
// store.
func TestDemoTrialPage(t *testing.T) {
	tools := clitest.RealStack(t)
	runs := t.TempDir()
	// The agent contracts' roomy time cap, as in TestDemoWithEachAgent.
	code, _, stderr := runCLI(t, "demo", "--registry", exampleRegistry, "--tools", tools, "--runs-dir", runs, "--run-id", "v1",
		"--intent", "books-cheapest-by-author", "--pairs", "2", "--slots", "2", "--seed", "5", "--time-cap", "600")
	require.Equal(t, exitOK, code, stderr)
	dir := rundir.RunDir{Path: filepath.Join(runs, "v1")}

	rel := viewer.PairPage("books-cheapest-by-author", 0)
	b, err := os.ReadFile(dir.File(rel))
	require.NoError(t, err, "the demo wrote the pair page")
	page := string(b)
	assert.Equal(t, 2, strings.Count(page, `<section class="arm">`), "both arms")
	shots := regexp.MustCompile(`<img src="\.\./\.\./(trials/[^"]+/screenshot\.png)"`).FindAllStringSubmatch(page, -1)
	require.Len(t, shots, 2, "each arm shows its screenshot")
	for _, s := range shots {
		f, err := os.Open(dir.File(s[1]))
		require.NoError(t, err)
		cfg, err := png.DecodeConfig(f)
		f.Close()
		require.NoError(t, err)
		assert.Equal(t, [2]int{rundir.ScreenshotWidth, rundir.ScreenshotHeight}, [2]int{cfg.Width, cfg.Height}, s[1])
	}
	for _, want := range []string{
		"call <code>mcp__pairbench__webmcp</code>", // the agent listed the page's tools
		"result of <code>mcp__pairbench__webmcp</code>",
		"first model request", "agent ended", "screenshot taken", // the timeline
		"<h3>WebMCP invocations</h3>", "<code>find_books</code>", // treatment invoked a page tool
		"Paper Boats", // the answer
		"turn 1",
	} {
		assert.Contains(t, page, want)
	}
	assert.NotContains(t, page, `class="warning"`, "every trial file was read")

	// view serves it, with the site's policy as a header.
	base := strings.TrimSuffix(startView(t, viewOptions{addr: "127.0.0.1:0"}, dir.Path), rundir.ReportHTML)
	resp, body := get(t, base+rel)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, page, body)
	assert.Contains(t, resp.Header.Get("Content-Security-Policy"), viewer.Policy)
	resp, _ = get(t, base+shots[0][1])
	assert.Equal(t, "image/png", resp.Header.Get("Content-Type"))
	resp, _ = get(t, base+rundir.RowsFile)
	assert.Equal(t, http.StatusNotFound, resp.StatusCode, "the rows are not part of the site")

	// A run in a store: fetched with its trials, reported and served.
	store := t.TempDir()
	require.NoError(t, os.CopyFS(filepath.Join(store, "v1"), os.DirFS(dir.Path)))
	for _, gone := range []string{rundir.ReportHTML, viewer.IntentsDir} {
		require.NoError(t, os.RemoveAll(filepath.Join(store, "v1", gone)))
	}
	base = strings.TrimSuffix(startView(t, viewOptions{store: store, runID: "v1", addr: "127.0.0.1:0"}, ""), rundir.ReportHTML)
	resp, body = get(t, base+rel)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, 2, strings.Count(body, `<section class="arm">`))
	resp, _ = get(t, base+shots[1][1])
	assert.Equal(t, http.StatusOK, resp.StatusCode, "the trials came with the run")
}

func TestViewRefusesToServeBeyondLoopback(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{
		{"view", dir, "--addr", "0.0.0.0:0"},
		{"view", dir, "--addr", "192.0.2.1:8080"},
		{"view"},
		{"view", dir, "--store", dir},
		{"view", "--store", dir},
		{"view", "--store", dir, "--run-id", "../escape"},
	} {
		code, _, stderr := runCLI(t, args...)
		assert.Equal(t, exitUsage, code, "%v: %s", args, stderr)
	}
	code, _, stderr := runCLI(t, "view", dir, "--open=false")
	assert.Equal(t, exitFailure, code)
	assert.Contains(t, stderr, "not a run", "a directory without a plan is not a run")
}
