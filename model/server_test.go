package model

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/grade"
	"github.com/pairbench/pairbench/intents"
	"github.com/pairbench/pairbench/runner"
)

const booksPrompt = "Find the cheapest book by Frank Herbert on books.example and give its title and price."

func booksIntent() intents.Intent {
	return intents.Intent{
		ID:        "books-cheapest",
		Domain:    "books.example",
		StartURL:  "http://books.example/",
		Prompt:    booksPrompt,
		EntryTool: "find_books",
		Answer: map[string]any{
			"type":       "object",
			"required":   []any{"title", "price"},
			"properties": map[string]any{"title": map[string]any{"type": "string"}, "price": map[string]any{"type": "string"}},
		},
		Rules: []intents.Rule{
			{Kind: "equals", Field: "title", Value: "Dune"},
			{Kind: "money", Field: "price", Value: "$9.99"},
		},
		Baseline: intents.Baseline{
			ToolArgs: map[string]any{"author": "Frank Herbert"},
			Steps: []intents.Step{
				{Tool: "browser_navigate", Args: map[string]any{"url": "http://books.example/search?q=herbert"}},
				{Tool: "browser_snapshot"},
				{Tool: "browser_click", Args: map[string]any{"element": "Sort by price"}},
				{Tool: "browser_snapshot"},
			},
			Answer: map[string]any{"title": "Dune", "price": "$9.99"},
		},
	}
}

var allTools = []string{
	"mcp__browser__browser_navigate", "mcp__browser__browser_click",
	"mcp__browser__browser_snapshot", "mcp__browser__browser_type", "mcp__pairbench__webmcp",
}

// call is one tool call the model made, as the client assembled it.
type call struct {
	Name string
	Args map[string]any
}

// streamTurn is one assistant message assembled from a stream.
type streamTurn struct {
	content  string
	calls    []toolCall
	finish   string
	usage    usage
	chunkIDs map[string]bool
}

// readStream checks the SSE framing of one streamed response and assembles
// the assistant message from its deltas.
func readStream(t *testing.T, body io.Reader) streamTurn {
	t.Helper()
	tr := streamTurn{chunkIDs: map[string]bool{}}
	var events []string
	sc := bufio.NewScanner(body)
	sc.Buffer(nil, 1<<20)
	expectBlank := false
	for sc.Scan() {
		line := sc.Text()
		if expectBlank {
			require.Empty(t, line, "each data line is followed by a blank line")
			expectBlank = false
			continue
		}
		require.True(t, strings.HasPrefix(line, "data: "), "event line %q starts with data: ", line)
		events = append(events, strings.TrimPrefix(line, "data: "))
		expectBlank = true
	}
	require.NoError(t, sc.Err())
	require.False(t, expectBlank, "the stream ends after a blank line")
	require.NotEmpty(t, events)
	require.Equal(t, "[DONE]", events[len(events)-1], "the stream ends with [DONE]")

	finishes, usages := 0, 0
	byIndex := map[int]*toolCall{}
	for i, ev := range events[:len(events)-1] {
		var c chunk
		require.NoError(t, json.Unmarshal([]byte(ev), &c), "event %d is a chunk", i)
		assert.Equal(t, "chat.completion.chunk", c.Object)
		assert.Equal(t, ID, c.Model)
		assert.Equal(t, Fingerprint, c.SystemFingerprint)
		tr.chunkIDs[c.ID] = true
		if c.Usage != nil {
			usages++
			assert.Empty(t, c.Choices, "the usage chunk has no choices")
			assert.Equal(t, 1, finishes, "usage comes after finish_reason")
			tr.usage = *c.Usage
			continue
		}
		require.Len(t, c.Choices, 1)
		ch := c.Choices[0]
		if ch.FinishReason != nil {
			finishes++
			tr.finish = *ch.FinishReason
		}
		tr.content += ch.Delta.Content
		for _, d := range ch.Delta.ToolCalls {
			require.NotNil(t, d.Index, "tool call deltas carry an index")
			tc, ok := byIndex[*d.Index]
			if !ok {
				require.NotEmpty(t, d.ID, "the first delta of a call carries its id")
				tc = &toolCall{ID: d.ID, Type: d.Type}
				byIndex[*d.Index] = tc
			}
			tc.Function.Name += d.Function.Name
			tc.Function.Arguments += d.Function.Arguments
		}
	}
	assert.Equal(t, 1, finishes, "exactly one finish_reason")
	assert.Equal(t, 1, usages, "exactly one usage chunk")
	assert.Len(t, tr.chunkIDs, 1, "every chunk carries the same id")
	for i := 0; i < len(byIndex); i++ {
		require.Contains(t, byIndex, i)
		tr.calls = append(tr.calls, *byIndex[i])
	}
	return tr
}

func post(t *testing.T, url string, body any) *http.Response {
	t.Helper()
	b, err := json.Marshal(body)
	require.NoError(t, err)
	resp, err := http.Post(url+"/v1/chat/completions", "application/json", bytes.NewReader(b))
	require.NoError(t, err)
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func toolDecls(names []string) []map[string]any {
	out := make([]map[string]any, len(names))
	for i, n := range names {
		out[i] = map[string]any{"type": "function", "function": map[string]any{"name": n, "parameters": map[string]any{"type": "object"}}}
	}
	return out
}

// converse drives a whole conversation the way pi does: stream a turn, run
// its tool calls with exec, send the results back, until the model stops.
func converse(t *testing.T, url string, tools []string, exec func(name string, args map[string]any) string) (string, []call) {
	t.Helper()
	msgs := []map[string]any{
		{"role": "system", "content": "You are a browsing agent. List the page's WebMCP tools first."},
		{"role": "user", "content": []map[string]any{{"type": "text", "text": booksPrompt}}},
	}
	var calls []call
	for range 10 {
		resp := post(t, url, map[string]any{
			"model": ID, "messages": msgs, "tools": toolDecls(tools), "stream": true,
			"stream_options": map[string]any{"include_usage": true},
		})
		require.Equal(t, http.StatusOK, resp.StatusCode)
		assert.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
		assert.Equal(t, "scripted", resp.Header.Get("X-Pairbench-Model"))
		tr := readStream(t, resp.Body)
		assert.Positive(t, tr.usage.PromptTokens)
		assert.Positive(t, tr.usage.CompletionTokens)
		assert.Equal(t, tr.usage.PromptTokens+tr.usage.CompletionTokens, tr.usage.TotalTokens)
		if tr.finish == "stop" {
			require.Empty(t, tr.calls)
			return tr.content, calls
		}
		require.Equal(t, "tool_calls", tr.finish)
		require.Len(t, tr.calls, 1, "one call per turn")
		tc := tr.calls[0]
		assert.Equal(t, "function", tc.Type)
		var args map[string]any
		require.NoError(t, json.Unmarshal([]byte(tc.Function.Arguments), &args), "arguments are a JSON object")
		calls = append(calls, call{Name: tc.Function.Name, Args: args})
		msgs = append(msgs,
			map[string]any{"role": "assistant", "content": nil, "tool_calls": []map[string]any{{
				"id": tc.ID, "type": "function", "function": map[string]any{"name": tc.Function.Name, "arguments": tc.Function.Arguments},
			}}},
			map[string]any{"role": "tool", "tool_call_id": tc.ID, "content": exec(tc.Function.Name, args)},
		)
	}
	t.Fatal("the model did not finish within 10 turns")
	return "", nil
}

// site plays the page: which WebMCP tools it lists, what the entry tool
// returns, and what a snapshot shows.
type site struct {
	listed   string
	invoke   string
	snapshot string
}

func (s site) exec(name string, args map[string]any) string {
	switch name {
	case "mcp__pairbench__webmcp":
		if args["action"] == "list" {
			return s.listed
		}
		return s.invoke
	case "mcp__browser__browser_snapshot":
		return s.snapshot
	default:
		return "### Ran Playwright code\nawait page.goto('...');\n### Page state: see snapshot file"
	}
}

const (
	listedFindBooks = `{"tools":[{"name":"find_books","description":"Lists every book by an author with its price, cheapest first.","readOnlyHint":true}]}`
	listedNone      = `{"tools":[]}`
	invokeResult    = `[{"title":"Dune","price":"$9.99"},{"title":"Children of Dune","price":"$12.50"}]`
	snapshotPage    = "### Page state\n- Page URL: http://books.example/search?q=herbert\n- Page Snapshot:\n```yaml\n- generic [ref=e1]:\n  - heading \"Books by Frank Herbert\" [level=1] [ref=e2]\n  - button \"Sort by price\" [ref=e7] [cursor=pointer]\n  - list [ref=e8]:\n    - listitem [ref=e9]:\n      - link \"Dune\" [ref=e20] [cursor=pointer]\n      - text: $9.99\n    - listitem [ref=e10]:\n      - link \"Children of Dune\" [ref=e21]\n      - text: $12.50\n```"
	snapshotBroken  = "- generic [ref=e1]:\n  - heading \"Books by Frank Herbert\" [level=1] [ref=e2]\n  - button \"Sort by price\" [ref=e3]\n  - text: Prices are unavailable right now.\n  - link \"Dune\" [ref=e4]"
)

func gradeFinal(t *testing.T, final string) grade.Result {
	t.Helper()
	in := booksIntent()
	g, err := grade.Compile(&in)
	require.NoError(t, err)
	return g.Grade(final)
}

func newTestServer(t *testing.T, opts Options) *httptest.Server {
	t.Helper()
	ts := httptest.NewServer(New([]intents.Intent{booksIntent()}, opts))
	t.Cleanup(ts.Close)
	return ts
}

func TestConversationToolPath(t *testing.T) {
	ts := newTestServer(t, Options{})
	final, calls := converse(t, ts.URL, allTools, site{listed: listedFindBooks, invoke: invokeResult}.exec)

	require.Len(t, calls, 2)
	assert.Equal(t, call{Name: "mcp__pairbench__webmcp", Args: map[string]any{"action": "list"}}, calls[0])
	assert.Equal(t, call{Name: "mcp__pairbench__webmcp", Args: map[string]any{
		"action": "invoke", "tool": "find_books", "arguments": map[string]any{"author": "Frank Herbert"},
	}}, calls[1])
	assert.Contains(t, final, "find_books")
	res := gradeFinal(t, final)
	assert.Equal(t, pairbench.Correct, res.Outcome, res.Reason)
}

func TestConversationStepsPath(t *testing.T) {
	ts := newTestServer(t, Options{})
	final, calls := converse(t, ts.URL, allTools, site{listed: listedNone, snapshot: snapshotPage}.exec)

	names := make([]string, len(calls))
	for i, c := range calls {
		names[i] = c.Name
	}
	assert.Equal(t, []string{
		"mcp__pairbench__webmcp", "mcp__browser__browser_navigate", "mcp__browser__browser_snapshot",
		"mcp__browser__browser_click", "mcp__browser__browser_snapshot",
	}, names)
	assert.Equal(t, map[string]any{"url": "http://books.example/search?q=herbert"}, calls[1].Args)
	assert.Equal(t, map[string]any{}, calls[2].Args, "a step without args sends an empty object")
	assert.Equal(t, map[string]any{"element": "Sort by price", "target": "e7"}, calls[3].Args, "the ref is read off the latest snapshot")
	res := gradeFinal(t, final)
	assert.Equal(t, pairbench.Correct, res.Outcome, res.Reason)
}

func TestConversationBrokenPageAnswersWrong(t *testing.T) {
	ts := newTestServer(t, Options{})
	final, _ := converse(t, ts.URL, allTools, site{listed: listedNone, snapshot: snapshotBroken}.exec)

	assert.Contains(t, final, "could not find price")
	res := gradeFinal(t, final)
	assert.Equal(t, pairbench.Wrong, res.Outcome, "a page without the price gives a wrong answer, not the memorised one")
	assert.Nil(t, res.Extracted["price"])
	assert.Equal(t, "Dune", res.Extracted["title"], "what it did read is kept")
}

func TestConversationToolErrorFallsBackToSteps(t *testing.T) {
	ts := newTestServer(t, Options{})
	s := site{listed: listedFindBooks, invoke: `{"status":"error","error":"upstream timeout"}`, snapshot: snapshotPage}
	final, calls := converse(t, ts.URL, allTools, s.exec)

	require.Len(t, calls, 6, "list, invoke, then the four steps")
	assert.Equal(t, "invoke", calls[1].Args["action"])
	assert.Equal(t, "mcp__browser__browser_snapshot", calls[5].Name)
	res := gradeFinal(t, final)
	assert.Equal(t, pairbench.Correct, res.Outcome, res.Reason)
}

func TestConversationUnhelpfulToolFallsBackToSteps(t *testing.T) {
	ts := newTestServer(t, Options{})
	// The tool answers, but without the price: a competent agent goes on to
	// the page rather than answering from what it lacks.
	s := site{listed: listedFindBooks, invoke: `[{"title":"Dune"},{"title":"Children of Dune"}]`, snapshot: snapshotPage}
	final, calls := converse(t, ts.URL, allTools, s.exec)

	require.Len(t, calls, 6, "list, invoke, then the four steps")
	assert.Equal(t, "mcp__browser__browser_navigate", calls[2].Name)
	res := gradeFinal(t, final)
	assert.Equal(t, pairbench.Correct, res.Outcome, res.Reason)
}

func TestConversationWithoutWebMCPTool(t *testing.T) {
	ts := newTestServer(t, Options{})
	final, calls := converse(t, ts.URL, allTools[:4], site{snapshot: snapshotPage}.exec)

	require.Len(t, calls, 4)
	assert.Equal(t, "mcp__browser__browser_navigate", calls[0].Name)
	res := gradeFinal(t, final)
	assert.Equal(t, pairbench.Correct, res.Outcome, res.Reason)
}

func TestNonStreaming(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	ts := newTestServer(t, Options{Now: func() time.Time { return now }})
	resp := post(t, ts.URL, map[string]any{
		"model": ID, "messages": []map[string]any{{"role": "user", "content": booksPrompt}}, "tools": toolDecls(allTools),
	})
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	var c completion
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&c))
	assert.Equal(t, "chat.completion", c.Object)
	assert.Equal(t, ID, c.Model)
	assert.Equal(t, Fingerprint, c.SystemFingerprint)
	assert.Equal(t, now.Unix(), c.Created)
	require.Len(t, c.Choices, 1)
	assert.Equal(t, "tool_calls", c.Choices[0].FinishReason)
	assert.Nil(t, c.Choices[0].Message.Content)
	require.Len(t, c.Choices[0].Message.ToolCalls, 1)
	assert.Equal(t, "mcp__pairbench__webmcp", c.Choices[0].Message.ToolCalls[0].Function.Name)
	assert.JSONEq(t, `{"action":"list"}`, c.Choices[0].Message.ToolCalls[0].Function.Arguments)
	assert.Positive(t, c.Usage.TotalTokens)
}

func TestUsageIsDeterministic(t *testing.T) {
	ts := newTestServer(t, Options{})
	req := func(extra string) usage {
		resp := post(t, ts.URL, map[string]any{
			"model": ID, "messages": []map[string]any{{"role": "user", "content": booksPrompt + extra}},
		})
		require.Equal(t, http.StatusOK, resp.StatusCode)
		var c completion
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&c))
		return c.Usage
	}
	a, b := req(""), req("")
	assert.Equal(t, a, b, "the same request counts the same tokens")
	longer := req(strings.Repeat(" Please be careful.", 100))
	assert.Greater(t, longer.PromptTokens, a.PromptTokens, "a longer prompt counts more tokens")
}

func TestModels(t *testing.T) {
	ts := newTestServer(t, Options{})
	resp, err := http.Get(ts.URL + "/v1/models")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var l modelList
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&l))
	require.Len(t, l.Data, 1)
	assert.Equal(t, ID, l.Data[0].ID)
	assert.Contains(t, l.Data[0].OwnedBy, "scripted")
}

// TestErrors checks every refusal is an HTTP error with an OpenAI-style body.
func TestErrors(t *testing.T) {
	userMsg := []map[string]any{{"role": "user", "content": booksPrompt}}
	tests := []struct {
		name   string
		opts   Options
		method string
		path   string
		body   any
		status int
		typ    string
		code   string
		msg    string
	}{
		{"unknown prompt", Options{}, "POST", "/v1/chat/completions",
			map[string]any{"model": ID, "messages": []map[string]any{{"role": "user", "content": "Book me a flight."}}},
			400, "invalid_request_error", "unknown_intent", "knows no intent"},
		{"wrong model", Options{}, "POST", "/v1/chat/completions",
			map[string]any{"model": "gpt-5", "messages": userMsg},
			404, "invalid_request_error", "model_not_found", `"gpt-5"`},
		{"bad json", Options{}, "POST", "/v1/chat/completions", "{not json",
			400, "invalid_request_error", "bad_request", "decode request"},
		{"unknown path", Options{}, "GET", "/v1/embeddings", nil,
			404, "invalid_request_error", "not_found", "/v1/embeddings"},
		{"injected 500", Options{Fault: FailFrom(1, 500)}, "POST", "/v1/chat/completions",
			map[string]any{"model": ID, "messages": userMsg, "stream": true},
			500, "server_error", "injected_fault", "injected failure"},
		{"injected fault without a status", Options{Fault: func(int) *Fault { return &Fault{} }}, "POST", "/v1/chat/completions",
			map[string]any{"model": ID, "messages": userMsg},
			500, "server_error", "injected_fault", "status 500"},
		{"injected 429 with message", Options{Fault: func(int) *Fault { return &Fault{Status: 429, Message: "slow down"} }},
			"POST", "/v1/chat/completions", map[string]any{"model": ID, "messages": userMsg},
			429, "rate_limit_error", "injected_fault", "slow down"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := newTestServer(t, tt.opts)
			var body io.Reader
			switch b := tt.body.(type) {
			case nil:
			case string:
				body = strings.NewReader(b)
			default:
				raw, err := json.Marshal(b)
				require.NoError(t, err)
				body = bytes.NewReader(raw)
			}
			req, err := http.NewRequest(tt.method, ts.URL+tt.path, body)
			require.NoError(t, err)
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			defer resp.Body.Close()
			assert.Equal(t, tt.status, resp.StatusCode)
			assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
			var e apiError
			require.NoError(t, json.NewDecoder(resp.Body).Decode(&e))
			assert.Equal(t, tt.typ, e.Error.Type)
			assert.Equal(t, tt.code, e.Error.Code)
			assert.Contains(t, e.Error.Message, tt.msg)
		})
	}
}

// TestFaultSequence checks faults are decided per request: the first
// answers, the later ones fail, as a provider that breaks mid-run.
func TestFaultSequence(t *testing.T) {
	ts := newTestServer(t, Options{Fault: FailFrom(2, 503)})
	body := map[string]any{"model": ID, "messages": []map[string]any{{"role": "user", "content": booksPrompt}}, "stream": true}
	first := post(t, ts.URL, body)
	assert.Equal(t, http.StatusOK, first.StatusCode)
	readStream(t, first.Body)
	for range 2 {
		assert.Equal(t, http.StatusServiceUnavailable, post(t, ts.URL, body).StatusCode)
	}
}

// TestFaultMidStream checks a cut stream: a 200 with one chunk, then the
// connection ends with no finish_reason, usage or [DONE].
func TestFaultMidStream(t *testing.T) {
	ts := newTestServer(t, Options{Fault: func(int) *Fault { return &Fault{MidStream: true} }})
	resp := post(t, ts.URL, map[string]any{"model": ID, "messages": []map[string]any{{"role": "user", "content": booksPrompt}}, "stream": true})
	require.Equal(t, http.StatusOK, resp.StatusCode)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	events := strings.Split(strings.TrimSpace(string(body)), "\n\n")
	require.Len(t, events, 1, "one chunk only: %s", body)
	var c chunk
	require.NoError(t, json.Unmarshal([]byte(strings.TrimPrefix(events[0], "data: ")), &c))
	require.Len(t, c.Choices, 1)
	assert.Nil(t, c.Choices[0].FinishReason)
	assert.NotContains(t, string(body), "[DONE]")
}

// TestConversationSnapshotsBeforeRefs checks the model reads the page before
// a step that needs an element's ref and after the last step, when the
// previous result only links to a snapshot (as Playwright MCP's navigate,
// type and click do).
func TestConversationSnapshotsBeforeRefs(t *testing.T) {
	in := booksIntent()
	in.Baseline.Steps = []intents.Step{
		{Tool: "browser_navigate", Args: map[string]any{"url": "http://books.example/"}},
		{Tool: "browser_type", Args: map[string]any{"element": "Sort by price", "text": "x", "submit": true}},
		{Tool: "browser_click", Args: map[string]any{"element": "Dune"}},
	}
	ts := httptest.NewServer(New([]intents.Intent{in}, Options{}))
	defer ts.Close()

	final, calls := converse(t, ts.URL, allTools, site{listed: listedNone, snapshot: snapshotPage}.exec)
	var names []string
	for _, c := range calls[1:] {
		names = append(names, strings.TrimPrefix(c.Name, "mcp__browser__"))
	}
	assert.Equal(t, []string{
		"browser_navigate", "browser_snapshot", "browser_type", "browser_snapshot",
		"browser_click", "browser_snapshot",
	}, names)
	assert.Equal(t, "e7", calls[3].Args["target"])
	assert.Equal(t, "e20", calls[5].Args["target"])
	res := gradeFinal(t, final)
	assert.Equal(t, pairbench.Correct, res.Outcome, res.Reason)
}

func TestSmokePromptIsAnswered(t *testing.T) {
	ts := newTestServer(t, Options{})
	body := `{"model":"` + ID + `","stream":false,"messages":[{"role":"user","content":"` + runner.SmokePrompt + `"}]}`
	resp, err := http.Post(ts.URL+"/v1/chat/completions", "application/json", strings.NewReader(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var out struct {
		Choices []struct {
			Message struct{ Content string } `json:"message"`
		} `json:"choices"`
		Usage struct {
			PromptTokens int `json:"prompt_tokens"`
		} `json:"usage"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	require.Len(t, out.Choices, 1)
	assert.Equal(t, "ready", out.Choices[0].Message.Content, "the smoke check needs no intent")
	assert.Positive(t, out.Usage.PromptTokens, "usage is reported, so the agent prices the call")
}
