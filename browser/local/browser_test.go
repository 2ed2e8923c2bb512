package local

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench/browser/internal/testsite"
	"github.com/pairbench/pairbench/runner"
)

func runnerSpec() runner.BrowserSpec { return runner.BrowserSpec{} }

func TestCloseLeavesNoProcessOrProfile(t *testing.T) {
	site := testsite.New(t)
	p := newProvider(t, site)
	ctx := context.Background()
	bb, err := p.Open(ctx, runnerSpec())
	require.NoError(t, err)
	b := bb.(*Browser)
	dir, root := browserDir(b), browserHostPid(b)
	_, err = b.Load(ctx, "http://books.test/") // a page brings renderer processes
	require.NoError(t, err)
	pids := processTree(root)
	require.Greater(t, len(pids), 3, "Chromium runs helper processes")

	require.NoError(t, b.Close(ctx))
	live := liveProcesses(t)
	for _, pid := range pids {
		_, alive := live[pid]
		assert.False(t, alive, "process %d left after Close", pid)
	}
	_, err = os.Stat(dir)
	assert.True(t, os.IsNotExist(err), "profile dir %s left after Close", dir)
	assert.NoError(t, b.Close(ctx), "a second Close")
}

func TestContextEndKillsTheBrowser(t *testing.T) {
	site := testsite.New(t)
	p := newProvider(t, site)
	ctx, cancel := context.WithCancel(context.Background())
	bb, err := p.Open(ctx, runnerSpec())
	require.NoError(t, err)
	b := bb.(*Browser)
	root, dir := browserHostPid(b), browserDir(b)
	pids := processTree(root)
	require.NotEmpty(t, pids)

	cancel()
	require.Eventually(t, func() bool {
		_, statErr := os.Stat(dir)
		live := liveProcesses(t)
		for _, pid := range pids {
			if _, ok := live[pid]; ok {
				return false
			}
		}
		return os.IsNotExist(statErr)
	}, testsite.Patience, 20*time.Millisecond, "processes or profile left after the context ended")
	assert.NoError(t, b.Close(context.Background()))
}

// TestBrowserShowsOnlyTheStartTab lists the browser's targets as any CDP
// client (Playwright MCP included) sees them: the start tab alone, none of
// the WebUI pages Chromium would otherwise preload for its own UI.
func TestBrowserShowsOnlyTheStartTab(t *testing.T) {
	b := openBrowser(t, newProvider(t, testsite.New(t)))
	resp, err := devToolsClient(b).Get("http://127.0.0.1/json/list")
	require.NoError(t, err)
	defer resp.Body.Close()
	var targets []struct{ Type, URL string }
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&targets))
	var urls []string
	for _, tg := range targets {
		urls = append(urls, tg.Type+" "+tg.URL)
	}
	assert.Equal(t, []string{"page about:blank"}, urls)
}

func TestChromiumFlagsMergeDisabledFeatures(t *testing.T) {
	args := Config{Flags: []string{"--lang=de", "--disable-features=Translate,Foo"}}.args()
	var disable []string
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--disable-features="); ok {
			disable = append(disable, v)
		}
	}
	assert.Equal(t, []string{"WebUIOmniboxPopup,WebUIOmniboxAimPopup,NetworkTimeServiceQuerying,Translate,Foo"}, disable, "one merged list")
	assert.Contains(t, args, "--lang=de")
	assert.Equal(t, "about:blank", args[len(args)-1])
}
