package model

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench"
)

// sseEvent is one server-sent event: its name ("" when it has none) and
// data.
type sseEvent struct {
	name string
	data string
}

// readEvents checks the framing of a named-event stream (event: and data:
// lines, a blank line after each event) and returns its events.
func readEvents(t *testing.T, body io.Reader) []sseEvent {
	t.Helper()
	var evs []sseEvent
	var cur sseEvent
	sc := bufio.NewScanner(body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			require.NotEmpty(t, cur.data, "an event has data")
			evs = append(evs, cur)
			cur = sseEvent{}
		case strings.HasPrefix(line, "event: "):
			cur.name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			cur.data = strings.TrimPrefix(line, "data: ")
		default:
			t.Fatalf("unexpected line %q", line)
		}
	}
	require.NoError(t, sc.Err())
	require.Empty(t, cur.data, "the stream ends after a blank line")
	return evs
}

func postJSON(t *testing.T, url string, body any) *http.Response {
	t.Helper()
	b, err := json.Marshal(body)
	require.NoError(t, err)
	resp, err := http.Post(url, "application/json", bytes.NewReader(b))
	require.NoError(t, err)
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// converseMessages drives a conversation over the Messages API as Claude
// Code does: content blocks, tool_use answered by tool_result blocks.
func converseMessages(t *testing.T, url string, tools []string, exec func(string, map[string]any) string) (string, []call) {
	t.Helper()
	var decls []map[string]any
	for _, n := range tools {
		decls = append(decls, map[string]any{"name": n, "input_schema": map[string]any{"type": "object", "properties": map[string]any{"target": map[string]any{}}}})
	}
	// A deferred tool is not in the model's context: never called.
	decls = append(decls, map[string]any{"name": "mcp__pairbench__webmcp_deferred", "input_schema": map[string]any{}, "defer_loading": true})
	msgs := []map[string]any{{"role": "user", "content": []map[string]any{{"type": "text", "text": booksPrompt}}}}
	var calls []call
	for range 10 {
		resp := postJSON(t, url+"/v1/messages?beta=true", map[string]any{"model": ID, "messages": msgs, "tools": decls, "stream": true, "max_tokens": 1000})
		require.Equal(t, http.StatusOK, resp.StatusCode)
		evs := readEvents(t, resp.Body)
		names := []string{}
		var text, args, stop, useID, useName string
		var in, out float64
		for _, ev := range evs {
			names = append(names, ev.name)
			var d map[string]any
			require.NoError(t, json.Unmarshal([]byte(ev.data), &d))
			require.Equal(t, ev.name, d["type"], "the data names its event")
			switch ev.name {
			case "message_start":
				in = d["message"].(map[string]any)["usage"].(map[string]any)["input_tokens"].(float64)
			case "content_block_start":
				if cb := d["content_block"].(map[string]any); cb["type"] == "tool_use" {
					useID, useName = cb["id"].(string), cb["name"].(string)
				}
			case "content_block_delta":
				delta := d["delta"].(map[string]any)
				if delta["type"] == "text_delta" {
					text += delta["text"].(string)
				} else {
					args += delta["partial_json"].(string)
				}
			case "message_delta":
				stop = d["delta"].(map[string]any)["stop_reason"].(string)
				out = d["usage"].(map[string]any)["output_tokens"].(float64)
			}
		}
		assert.Equal(t, []string{"message_start", "content_block_start", "content_block_delta", "content_block_delta",
			"content_block_stop", "message_delta", "message_stop"}, names)
		assert.Positive(t, in)
		assert.Positive(t, out)
		if stop == "end_turn" {
			return text, calls
		}
		require.Equal(t, "tool_use", stop)
		var a map[string]any
		require.NoError(t, json.Unmarshal([]byte(args), &a), "the input is a JSON object")
		calls = append(calls, call{Name: useName, Args: a})
		msgs = append(msgs,
			map[string]any{"role": "assistant", "content": []map[string]any{{"type": "tool_use", "id": useID, "name": useName, "input": a}}},
			map[string]any{"role": "user", "content": []map[string]any{{"type": "tool_result", "tool_use_id": useID,
				"content": []map[string]any{{"type": "text", "text": exec(useName, a)}}}}},
		)
	}
	t.Fatal("no answer in 10 turns")
	return "", nil
}

func TestMessagesConversation(t *testing.T) {
	ts := newTestServer(t, Options{})
	final, calls := converseMessages(t, ts.URL, allTools, site{listed: listedNone, snapshot: snapshotPage}.exec)
	names := make([]string, len(calls))
	for i, c := range calls {
		names[i] = c.Name
	}
	assert.Equal(t, []string{"mcp__pairbench__webmcp", "mcp__browser__browser_navigate", "mcp__browser__browser_snapshot",
		"mcp__browser__browser_click", "mcp__browser__browser_snapshot"}, names)
	assert.Equal(t, "e7", calls[3].Args["target"], "the ref is read off the latest snapshot")
	res := gradeFinal(t, final)
	assert.Equal(t, pairbench.Correct, res.Outcome, res.Reason)
}

// converseResponses drives a conversation over the Responses API as Codex
// does: MCP tools in namespaces, function_call answered by
// function_call_output items.
func converseResponses(t *testing.T, url string, exec func(string, map[string]any) string) (string, []call) {
	t.Helper()
	fn := func(name string) map[string]any {
		return map[string]any{"type": "function", "name": name, "parameters": map[string]any{"type": "object", "properties": map[string]any{}}}
	}
	tools := []map[string]any{
		fn("request_user_input"),
		{"type": "namespace", "name": "mcp__browser", "tools": []any{fn("browser_navigate"), fn("browser_snapshot"), fn("browser_click")}},
		{"type": "namespace", "name": "mcp__pairbench", "tools": []any{fn("webmcp")}},
		{"type": "web_search"},
	}
	input := []map[string]any{
		{"type": "message", "role": "developer", "content": []map[string]any{{"type": "input_text", "text": "You are Codex."}}},
		{"type": "message", "role": "user", "content": []map[string]any{{"type": "input_text", "text": booksPrompt}}},
	}
	var calls []call
	for range 10 {
		resp := postJSON(t, url+"/v1/responses", map[string]any{"model": ID, "input": input, "tools": tools, "stream": true})
		require.Equal(t, http.StatusOK, resp.StatusCode)
		var done map[string]any
		var deltas string
		evs := readEvents(t, resp.Body)
		for i, ev := range evs {
			var d map[string]any
			require.NoError(t, json.Unmarshal([]byte(ev.data), &d))
			require.Equal(t, ev.name, d["type"], "the data names its event")
			assert.EqualValues(t, i, d["sequence_number"])
			switch ev.name {
			case "response.function_call_arguments.delta", "response.output_text.delta":
				deltas += d["delta"].(string)
			case "response.completed":
				done = d["response"].(map[string]any)
			}
		}
		require.Equal(t, "response.created", evs[0].name)
		require.NotNil(t, done, "the stream ends with response.completed")
		u := done["usage"].(map[string]any)
		assert.Positive(t, u["input_tokens"])
		assert.Positive(t, u["output_tokens"])
		item := done["output"].([]any)[0].(map[string]any)
		if item["type"] == "message" {
			text := item["content"].([]any)[0].(map[string]any)["text"].(string)
			assert.Equal(t, text, deltas, "the deltas add up to the text")
			return text, calls
		}
		require.Equal(t, "function_call", item["type"])
		assert.Equal(t, item["arguments"], deltas, "the deltas add up to the arguments")
		var a map[string]any
		require.NoError(t, json.Unmarshal([]byte(item["arguments"].(string)), &a))
		full := item["namespace"].(string) + "__" + item["name"].(string)
		calls = append(calls, call{Name: full, Args: a})
		input = append(input, item, map[string]any{"type": "function_call_output", "call_id": item["call_id"], "output": exec(full, a)})
	}
	t.Fatal("no answer in 10 turns")
	return "", nil
}

func TestResponsesConversation(t *testing.T) {
	ts := newTestServer(t, Options{})
	final, calls := converseResponses(t, ts.URL, site{listed: listedFindBooks, invoke: invokeResult}.exec)
	require.Len(t, calls, 2)
	assert.Equal(t, call{Name: "mcp__pairbench__webmcp", Args: map[string]any{"action": "list"}}, calls[0],
		"a namespaced tool is called by namespace and name")
	assert.Equal(t, "invoke", calls[1].Args["action"])
	res := gradeFinal(t, final)
	assert.Equal(t, pairbench.Correct, res.Outcome, res.Reason)
}

// TestAPIFaults checks every injected fault on every API: a failure status
// answers in the API's own error format; a cut or garbled stream starts as
// a 200 and ends after its first event; a stall never answers.
func TestAPIFaults(t *testing.T) {
	apis := map[string]struct {
		path string
		body map[string]any
		// errMessage reads the message of an error body.
		errMessage func(map[string]any) string
	}{
		"chat": {"/v1/chat/completions", map[string]any{"model": ID, "stream": true,
			"messages": []map[string]any{{"role": "user", "content": booksPrompt}}},
			func(b map[string]any) string { return b["error"].(map[string]any)["message"].(string) }},
		"messages": {"/v1/messages", map[string]any{"model": ID, "stream": true, "max_tokens": 10,
			"messages": []map[string]any{{"role": "user", "content": booksPrompt}}},
			func(b map[string]any) string {
				assert.Equal(t, "error", b["type"])
				return b["error"].(map[string]any)["message"].(string)
			}},
		"responses": {"/v1/responses", map[string]any{"model": ID, "stream": true, "input": booksPrompt},
			func(b map[string]any) string { return b["error"].(map[string]any)["message"].(string) }},
	}
	for name, api := range apis {
		t.Run(name, func(t *testing.T) {
			var fault *Fault
			ts := newTestServer(t, Options{Fault: func(int) *Fault { return fault }})
			url := ts.URL + api.path

			fault = &Fault{Status: 529, Message: "overloaded, try later"}
			resp := postJSON(t, url, api.body)
			assert.Equal(t, 529, resp.StatusCode)
			var body map[string]any
			require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
			assert.Equal(t, "overloaded, try later", api.errMessage(body))

			for _, f := range []*Fault{{MidStream: true}, {Garbage: true}} {
				fault = f
				resp := postJSON(t, url, api.body)
				require.Equal(t, http.StatusOK, resp.StatusCode)
				raw, err := io.ReadAll(resp.Body)
				require.NoError(t, err)
				events := strings.Split(strings.TrimSpace(string(raw)), "\n\n")
				if f.Garbage {
					require.Len(t, events, 2, "%s", raw)
					assert.False(t, json.Valid([]byte(strings.TrimPrefix(events[1], "data: "))), "the second event is not JSON")
				} else {
					require.Len(t, events, 1, "one event only: %s", raw)
				}
			}

			fault = &Fault{Stall: true}
			ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
			defer cancel()
			b, _ := json.Marshal(api.body)
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(b))
			require.NoError(t, err)
			_, err = http.DefaultClient.Do(req)
			require.ErrorIs(t, err, context.DeadlineExceeded, "a stalled model never answers")

			fault = nil
			body = map[string]any{}
			for k, v := range api.body {
				body[k] = v
			}
			body["model"] = "claude-opus-9"
			resp = postJSON(t, url, body)
			assert.Equal(t, http.StatusNotFound, resp.StatusCode)
			var e map[string]any
			require.NoError(t, json.NewDecoder(resp.Body).Decode(&e))
			assert.Contains(t, api.errMessage(e), ID, "the error names the scripted model")
		})
	}
}
