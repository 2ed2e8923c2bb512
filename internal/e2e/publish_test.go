//go:build e2e

package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench/internal/clitest"
	"github.com/pairbench/pairbench/internal/pagetest"
	"github.com/pairbench/pairbench/rundir"
	"github.com/pairbench/pairbench/viewer"
)

// TestPublishedShardedRunShowsEveryPair benches a real run split over two
// runners that meet in a store (the example workflow's path), merges and
// publishes it with merge --report --site-url, and reads the published
// site as a reader would, through a static host over the store: the intent
// page links every pair, and a pair page shows both arms' screenshots and
// transcripts, in Chromium. The screenshot is kept for a person to look at.
func TestPublishedShardedRunShowsEveryPair(t *testing.T) {
	tools := clitest.RealStack(t)
	bin := clitest.Build(t)
	reg := clitest.ExampleRegistry
	store := t.TempDir()
	args := func(runs string, more ...string) []string {
		return append([]string{"run", reg, "--example-sites", "--intent", "books-cheapest-by-author", "--pairs", "2",
			"--start-delay", "0", "--run-id", "s1", "--runs-dir", runs, "--store", store, "--tools", tools, "--seed", "5",
			"--time-cap", "600"}, more...)
	}
	code, _, stderr := runBin(t, bin, args(t.TempDir(), "--plan-only")...)
	require.Equal(t, clitest.ExitOK, code, stderr)
	for k := 1; k <= 2; k++ {
		code, _, stderr = runBin(t, bin, args(t.TempDir(), "--shard", fmt.Sprintf("%d/2", k))...)
		require.Equal(t, clitest.ExitOK, code, "shard %d: %s", k, stderr)
	}

	// The store served as a website, as a static host or CDN would.
	host := httptest.NewServer(http.FileServer(http.Dir(store)))
	t.Cleanup(host.Close)
	out := filepath.Join(t.TempDir(), "merged")
	code, stdout, stderr := runBin(t, bin, "merge", "--store", store, "--run-id", "s1", "--out", out, "--report", "--site-url", host.URL+"/")
	require.Equal(t, clitest.ExitOK, code, stderr)
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	link := lines[len(lines)-1]
	assert.Equal(t, host.URL+"/s1/report.html", link, "the link is the site's, not a presigned report.html")

	intent, err := os.ReadFile(filepath.Join(store, "s1", viewer.IntentPage("books-cheapest-by-author")))
	require.NoError(t, err, "the intent page is published")
	assert.NotContains(t, string(intent), "no trial directories")
	for pair := range 2 {
		rel := viewer.PairPage("books-cheapest-by-author", pair)
		assert.FileExists(t, filepath.Join(store, "s1", rel), "pair %d's page is published", pair)
		assert.Contains(t, string(intent), strings.TrimPrefix(rel, viewer.IntentsDir+"/"), "the intent page links pair %d", pair)
	}

	b := pagetest.Start(t)
	p := b.Open(t, host.URL+"/s1/"+viewer.PairPage("books-cheapest-by-author", 1), 1000)
	shot := filepath.Join(screenshotDir(t), "published-sharded-pair.png")
	p.Screenshot(shot)
	t.Logf("screenshot: %s", shot)
	assert.Equal(t, 2, pagetest.Eval[int](p, `document.querySelectorAll('section.arm').length`), "both arms")
	assert.Equal(t, 2, pagetest.Eval[int](p, fmt.Sprintf(`[...document.images].filter(i => i.complete && i.naturalWidth === %d).length`, rundir.ScreenshotWidth)),
		"both arms' screenshots load from the published site")
	assert.GreaterOrEqual(t, pagetest.Eval[int](p, `document.querySelectorAll('ol.steps li').length`), 2, "the transcripts' steps are shown")
	assert.Zero(t, pagetest.Eval[int](p, `document.querySelectorAll('.warning').length`), "every trial file was read")
}

// screenshotDir is where a test keeps screenshots for a person to look at:
// $PAIRBENCH_SCREENSHOTS, or a directory of the test's.
func screenshotDir(t *testing.T) string {
	t.Helper()
	if d := os.Getenv("PAIRBENCH_SCREENSHOTS"); d != "" {
		require.NoError(t, os.MkdirAll(d, 0o755))
		return d
	}
	return t.TempDir()
}
