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

	"github.com/pairbench/pairbench/intents"
	"github.com/pairbench/pairbench/runner"
	"github.com/pairbench/pairbench/runner/webmcp"
)

func runnerSpec() runner.BrowserSpec { return runner.BrowserSpec{} }

func toolNames(tools []webmcp.Tool) []string {
	names := make([]string, len(tools))
	for i, t := range tools {
		names[i] = t.Name
	}
	return names
}

func TestTreatmentRegistersToolsMatchingTheURL(t *testing.T) {
	site := newTestSite(t)
	b := openBrowser(t, newProvider(t, site))
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()

	require.NoError(t, b.RegisterTools(ctx, bookTools(t)))
	info, err := b.Load(ctx, "http://books.test/")
	require.NoError(t, err)
	assert.Equal(t, "http://books.test/", info.URL)
	assert.Equal(t, 1, info.Navigations)
	assert.False(t, info.LoadedAt.IsZero())

	live, err := b.LiveTools(ctx)
	require.NoError(t, err)
	// weather_now's pattern does not match books.test, so it is not there.
	assert.Equal(t, []string{"explode", "find_books", "out_of_stock"}, toolNames(live))
	for _, tool := range live {
		assert.True(t, tool.Registered, "%s registered", tool.Name)
		assert.True(t, tool.ReadOnly, "%s readOnlyHint", tool.Name)
	}
	assert.Equal(t, "Find books", live[1].Title)
	assert.JSONEq(t, `{"type":"object","properties":{"author":{"type":"string"}},"required":["author"]}`, string(live[1].InputSchema))

	res, err := b.InvokeTool(ctx, "find_books", json.RawMessage(`{"author":"Ada"}`))
	require.NoError(t, err)
	assert.Empty(t, res.Exception)
	assert.True(t, res.Registered)
	assert.JSONEq(t, `[{"title":"Notes","author":"Ada","price":12}]`, res.Text)

	res, err = b.InvokeTool(ctx, "explode", nil)
	require.NoError(t, err)
	assert.Contains(t, res.Exception, "kaboom")
	assert.Empty(t, res.Text)

	res, err = b.InvokeTool(ctx, "weather_now", nil)
	require.NoError(t, err)
	assert.Contains(t, res.Exception, `no tool named "weather_now"`)
	assert.False(t, res.Registered)

	// The same browser, on the weather site, has only the weather tool.
	_, err = b.Load(ctx, "http://weather.test/")
	require.NoError(t, err)
	live, err = b.LiveTools(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{"weather_now"}, toolNames(live))
}

func TestCloseLeavesNoProcessOrProfile(t *testing.T) {
	site := newTestSite(t)
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
	site := newTestSite(t)
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
	}, patience, 20*time.Millisecond, "processes or profile left after the context ended")
	assert.NoError(t, b.Close(context.Background()))
}

func TestStartPageScriptsSeeTheToolsFirst(t *testing.T) {
	site := newTestSite(t)
	b := openBrowser(t, newProvider(t, site))
	ctx, cancel := context.WithTimeout(t.Context(), patience)
	defer cancel()
	require.NoError(t, b.RegisterTools(ctx, bookTools(t)))
	_, err := b.Load(ctx, "http://books.test/probe")
	require.NoError(t, err)
	var probe string
	require.NoError(t, b.eval(ctx, b.start, "window.probe", &probe))
	assert.Equal(t, "explode,find_books,out_of_stock", probe)
}

func TestRegisterToolsOnlyOnce(t *testing.T) {
	site := newTestSite(t)
	b := openBrowser(t, newProvider(t, site))
	require.NoError(t, b.RegisterTools(t.Context(), bookTools(t)))
	assert.Error(t, b.RegisterTools(t.Context(), bookTools(t)))
}

// TestSameDocumentURLChangesFollowThePatterns moves within one document, as a
// single-page site does, and checks the tools follow the URL.
func TestSameDocumentURLChangesFollowThePatterns(t *testing.T) {
	site := newTestSite(t)
	b := openBrowser(t, newProvider(t, site))
	ctx, cancel := context.WithTimeout(t.Context(), patience)
	defer cancel()
	tools := []intents.Tool{
		testTool(t, "find_books", "http://books.test/*"),
		testTool(t, "weather_now", "http://books.test/shelf/*"),
	}
	require.NoError(t, b.RegisterTools(ctx, tools))
	_, err := b.Load(ctx, "http://books.test/")
	require.NoError(t, err)

	liveAfter := func(js string) []string {
		t.Helper()
		var ignored any
		require.NoError(t, b.eval(ctx, b.start, js+"; null", &ignored))
		live, err := b.LiveTools(ctx)
		require.NoError(t, err)
		return toolNames(live)
	}
	assert.Equal(t, []string{"find_books"}, liveAfter("void 0"))
	assert.Equal(t, []string{"find_books", "weather_now"}, liveAfter(`history.pushState({}, "", "/shelf/3")`))
	res, err := b.InvokeTool(ctx, "weather_now", nil)
	require.NoError(t, err)
	assert.JSONEq(t, `{"temp":21}`, res.Text)
	assert.True(t, res.Registered)
	assert.Equal(t, []string{"find_books"}, liveAfter(`history.pushState({}, "", "/counter")`))
	// history.back() traverses asynchronously.
	liveAfter(`history.back()`)
	assert.Eventually(t, func() bool {
		live, err := b.LiveTools(ctx)
		return err == nil && assert.ObjectsAreEqual([]string{"find_books", "weather_now"}, toolNames(live))
	}, patience, 20*time.Millisecond, "back on /shelf/3")
}

// TestBrowserShowsOnlyTheStartTab lists the browser's targets as any CDP
// client (Playwright MCP included) sees them: the start tab alone, none of
// the WebUI pages Chromium would otherwise preload for its own UI.
func TestBrowserShowsOnlyTheStartTab(t *testing.T) {
	b := openBrowser(t, newProvider(t, newTestSite(t)))
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
