package webmcp

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench"
)

// scriptedPage is a Page whose tools answer from Go funcs. It stands in for
// the browser, which package local tests against real Chromium.
type scriptedPage struct {
	tools   []Tool
	answers map[string]func(ctx context.Context, args json.RawMessage) (Result, error)
}

var _ Page = (*scriptedPage)(nil)

func (p *scriptedPage) LiveTools(context.Context) ([]Tool, error) { return p.tools, nil }

func (p *scriptedPage) InvokeTool(ctx context.Context, name string, args json.RawMessage) (Result, error) {
	answer, ok := p.answers[name]
	if !ok {
		return Result{Exception: `no tool named "` + name + `" is live on this page`}, nil
	}
	return answer(ctx, args)
}

// stepClock advances by step on every read, so durations are exact.
type stepClock struct {
	t    time.Time
	step time.Duration
}

func (c *stepClock) now() time.Time { c.t = c.t.Add(c.step); return c.t }

// connect starts s and returns an MCP client session on it over streamable
// HTTP, the transport pi uses.
func connect(t *testing.T, s *Server) *mcp.ClientSession {
	t.Helper()
	require.NoError(t, s.Start())
	t.Cleanup(func() { s.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: s.URL(), MaxRetries: -1}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { cs.Close() })
	return cs
}

func callWebMCP(t *testing.T, cs *mcp.ClientSession, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: ToolName, Arguments: args})
	require.NoError(t, err)
	return res
}

func text(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	require.Len(t, res.Content, 1)
	tc, ok := res.Content[0].(*mcp.TextContent)
	require.True(t, ok, "content is %T, want text", res.Content[0])
	return tc.Text
}

func bookPage() *scriptedPage {
	return &scriptedPage{
		tools: []Tool{
			{Name: "find_books", Description: "Lists books.", InputSchema: json.RawMessage(`{"type":"object"}`), Registered: true},
			{Name: "shop_hours", Description: "Opening hours."},
		},
		answers: map[string]func(context.Context, json.RawMessage) (Result, error){
			"find_books": func(_ context.Context, args json.RawMessage) (Result, error) {
				return Result{Text: `{"books":[{"title":"Notes"}],"args":` + string(args) + `}`, Registered: true}, nil
			},
			"shop_hours": func(context.Context, json.RawMessage) (Result, error) { return Result{Text: `"9-17"`}, nil },
			"closed": func(context.Context, json.RawMessage) (Result, error) {
				return Result{Text: `{"status":"error","error":"the shop is closed"}`, Registered: true}, nil
			},
			"mcp_style": func(context.Context, json.RawMessage) (Result, error) {
				return Result{Text: `{"isError":true,"content":[{"type":"text","text":"bad date"}]}`, Registered: true}, nil
			},
			"explode": func(context.Context, json.RawMessage) (Result, error) {
				return Result{Exception: "Tool was executed but the invocation failed: kaboom", Registered: true}, nil
			},
			"gone": func(context.Context, json.RawMessage) (Result, error) {
				return Result{}, errors.New("CDP connection closed")
			},
		},
	}
}

func TestServerOffersOneTool(t *testing.T) {
	cs := connect(t, New(bookPage(), Options{}))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tools, err := cs.ListTools(ctx, nil)
	require.NoError(t, err)
	require.Len(t, tools.Tools, 1)
	assert.Equal(t, "webmcp", tools.Tools[0].Name)
	assert.NotContains(t, tools.Tools[0].Description, "regist", "the description must not hint at the arm")
}

func TestListShowsNameDescriptionAndSchema(t *testing.T) {
	s := New(bookPage(), Options{})
	cs := connect(t, s)
	res := callWebMCP(t, cs, map[string]any{"action": "list"})
	require.False(t, res.IsError, text(t, res))
	assert.JSONEq(t, `{"tools":[
		{"name":"find_books","description":"Lists books.","inputSchema":{"type":"object"}},
		{"name":"shop_hours","description":"Opening hours."}]}`, text(t, res))
	assert.NotNil(t, res.StructuredContent)
	assert.Equal(t, 1, s.Lists())
	assert.Empty(t, s.Invocations(), "a listing is not an invocation")

	empty := New(&scriptedPage{}, Options{})
	res = callWebMCP(t, connect(t, empty), map[string]any{"action": "list"})
	assert.JSONEq(t, `{"tools":[]}`, text(t, res))
}

func TestInvokeRecordsEveryCall(t *testing.T) {
	clock := &stepClock{t: time.Unix(0, 0), step: 7 * time.Millisecond}
	s := New(bookPage(), Options{Now: clock.now})
	cs := connect(t, s)

	res := callWebMCP(t, cs, map[string]any{"action": "invoke", "tool": "find_books", "arguments": map[string]any{"author": "Ada"}})
	require.False(t, res.IsError, text(t, res))
	assert.JSONEq(t, `{"books":[{"title":"Notes"}],"args":{"author":"Ada"}}`, text(t, res))
	assert.NotNil(t, res.StructuredContent, "an object result travels as structuredContent too")

	res = callWebMCP(t, cs, map[string]any{"action": "invoke", "tool": "shop_hours"})
	assert.False(t, res.IsError)
	assert.Equal(t, `"9-17"`, text(t, res))
	assert.Nil(t, res.StructuredContent)

	// The tool's own failure reaches the agent as the tool's result.
	res = callWebMCP(t, cs, map[string]any{"action": "invoke", "tool": "closed", "arguments": map[string]any{}})
	assert.False(t, res.IsError)
	assert.Contains(t, text(t, res), "the shop is closed")

	callWebMCP(t, cs, map[string]any{"action": "invoke", "tool": "mcp_style"})

	res = callWebMCP(t, cs, map[string]any{"action": "invoke", "tool": "explode"})
	assert.True(t, res.IsError)
	assert.Contains(t, text(t, res), "kaboom")

	res = callWebMCP(t, cs, map[string]any{"action": "invoke", "tool": "gone"})
	assert.True(t, res.IsError)
	assert.Contains(t, text(t, res), "could not invoke gone")

	res = callWebMCP(t, cs, map[string]any{"action": "invoke", "tool": "stale_tool"})
	assert.True(t, res.IsError)

	res = callWebMCP(t, cs, map[string]any{"action": "invoke"})
	assert.True(t, res.IsError)
	assert.Contains(t, text(t, res), `needs "tool"`)

	res = callWebMCP(t, cs, map[string]any{"action": "invoke", "tool": "find_books", "arguments": "Ada"})
	assert.True(t, res.IsError)

	assert.Equal(t, []pairbench.Invocation{
		{Tool: "find_books", Status: "ok", MS: 7, Registered: true},
		{Tool: "shop_hours", Status: "ok", MS: 7},
		{Tool: "closed", Status: "error", Error: "the shop is closed", MS: 7, Registered: true},
		{Tool: "mcp_style", Status: "error", Error: "bad date", MS: 7, Registered: true},
		{Tool: "explode", Status: "error", Error: "explode failed: Tool was executed but the invocation failed: kaboom", MS: 7, Registered: true},
		{Tool: "gone", Status: "error", Error: "webmcp: could not invoke gone: CDP connection closed", MS: 7},
		{Tool: "stale_tool", Status: "error", Error: `stale_tool failed: no tool named "stale_tool" is live on this page`, MS: 7},
		{Tool: "", Status: "error", Error: `webmcp: invoke needs "tool", the name of a tool from {"action":"list"}`, MS: 7},
		{Tool: "find_books", Status: "error", Error: `webmcp: "arguments" must be an object`, MS: 7},
	}, s.Invocations())
}

func TestInvokeTimesOut(t *testing.T) {
	page := &scriptedPage{answers: map[string]func(context.Context, json.RawMessage) (Result, error){}}
	s := New(page, Options{InvokeTimeout: 50 * time.Millisecond})
	page.answers["hang"] = func(ctx context.Context, _ json.RawMessage) (Result, error) {
		<-ctx.Done() // a tool that never resolves
		return Result{}, ctx.Err()
	}
	cs := connect(t, s)
	res := callWebMCP(t, cs, map[string]any{"action": "invoke", "tool": "hang"})
	assert.True(t, res.IsError)
	assert.Contains(t, text(t, res), "did not finish within 50ms")
	require.Len(t, s.Invocations(), 1)
	assert.Equal(t, "error", s.Invocations()[0].Status)
}

func TestBadActionIsAnErrorResult(t *testing.T) {
	s := New(bookPage(), Options{})
	res := callWebMCP(t, connect(t, s), map[string]any{"action": "delete"})
	assert.True(t, res.IsError)
	assert.Contains(t, text(t, res), `"list" or "invoke"`)
	assert.Empty(t, s.Invocations())
}
