package model

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// The OpenAI Responses API (POST /v1/responses), as Codex speaks it: input
// items (messages, function_call, function_call_output), function tools and
// namespaces of them, streamed as response.* events.

type responsesRequest struct {
	Model string `json:"model"`
	// Input is a string or a list of items.
	Input  json.RawMessage `json:"input"`
	Tools  []responsesTool `json:"tools,omitempty"`
	Stream bool            `json:"stream,omitempty"`
}

type responsesItem struct {
	Type string `json:"type"`
	Role string `json:"role,omitempty"`
	// Content (message) is a string or a list of parts.
	Content json.RawMessage `json:"content,omitempty"`
	// function_call and function_call_output
	CallID    string `json:"call_id,omitempty"`
	Name      string `json:"name,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	Arguments string `json:"arguments,omitempty"`
	// Output (function_call_output) is a string or a list of parts.
	Output json.RawMessage `json:"output,omitempty"`
}

type responsesTool struct {
	Type       string `json:"type"`
	Name       string `json:"name"`
	Parameters struct {
		Properties map[string]json.RawMessage `json:"properties"`
	} `json:"parameters"`
	// Tools are a namespace's functions.
	Tools []responsesTool `json:"tools,omitempty"`
}

// partsText reads a string or a list of parts with text.
func partsText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	_ = json.Unmarshal(raw, &parts) // anything else reads as no text
	var texts []string
	for _, p := range parts {
		if p.Text != "" {
			texts = append(texts, p.Text)
		}
	}
	return strings.Join(texts, "\n")
}

// responsesConversation reads a Responses request. A namespaced function
// is declared under namespace + "__" + name (Codex's MCP tools arrive as
// namespace "mcp__browser" holding "browser_click"); ns maps that full name
// back to the pair, for the call.
func responsesConversation(req responsesRequest) (c conversation, ns map[string][2]string) {
	var items []responsesItem
	var prompt string
	if json.Unmarshal(req.Input, &prompt) == nil {
		items = []responsesItem{{Type: "message", Role: "user", Content: req.Input}}
	} else {
		_ = json.Unmarshal(req.Input, &items) // anything else reads as no input
	}
	var cs calls
	for _, it := range items {
		switch it.Type {
		case "message", "":
			text := partsText(it.Content)
			c.promptBytes += 4 + len(text)
			if it.Role == "user" {
				c.user = append(c.user, text)
			}
		case "function_call":
			cs.call(it.CallID)
			c.promptBytes += len(it.Name) + len(it.Arguments)
		case "function_call_output":
			text := partsText(it.Output)
			cs.result(it.CallID, text)
			c.promptBytes += len(text)
		}
	}
	c.obs = cs.observations()
	ns = map[string][2]string{}
	for _, t := range req.Tools {
		switch t.Type {
		case "function":
			c.declare(t.Name, keys(t.Parameters.Properties))
		case "namespace":
			for _, f := range t.Tools {
				full := t.Name + "__" + f.Name
				c.declare(full, keys(f.Parameters.Properties))
				ns[full] = [2]string{t.Name, f.Name}
			}
		}
	}
	return c, ns
}

func (s *Server) responses(w http.ResponseWriter, r *http.Request) {
	n, log, fault, failed := s.begin(w, r, openAIError)
	if failed {
		return
	}
	var req responsesRequest
	if !decode(w, r, &req, openAIError) {
		return
	}
	if req.Model != ID {
		openAIError(w, http.StatusNotFound, "model_not_found", unknownModel(req.Model))
		return
	}
	c, ns := responsesConversation(req)
	t, in, ok := s.decide(c, "call_scripted_")
	if !ok {
		openAIError(w, http.StatusBadRequest, "unknown_intent", errUnknownIntent)
		return
	}
	logMove(log, in, t)

	id := fmt.Sprintf("resp_scripted_%d", n)
	created := s.opts.Now().Unix()
	var item map[string]any
	var pieces [2]string
	if mc := t.move.call; mc != nil {
		item = map[string]any{"id": fmt.Sprintf("fc_scripted_%d", n), "type": "function_call", "status": "completed",
			"call_id": t.callID, "name": mc.Name, "arguments": mc.Arguments}
		if pair, ok := ns[mc.Name]; ok {
			item["namespace"], item["name"] = pair[0], pair[1]
		}
		pieces[0], pieces[1] = split(mc.Arguments)
	} else {
		item = map[string]any{"id": fmt.Sprintf("msg_scripted_%d", n), "type": "message", "status": "completed",
			"role": "assistant", "content": []any{map[string]any{"type": "output_text", "text": t.move.final, "annotations": []any{}}}}
		pieces[0], pieces[1] = split(t.move.final)
	}
	usage := map[string]any{
		"input_tokens": t.input, "input_tokens_details": map[string]int{"cached_tokens": 0},
		"output_tokens": t.output, "output_tokens_details": map[string]int{"reasoning_tokens": 0},
		"total_tokens": t.input + t.output,
	}
	resp := func(status string, output []any, usage any) map[string]any {
		return map[string]any{"id": id, "object": "response", "created_at": created, "status": status,
			"model": ID, "output": output, "usage": usage}
	}
	if !req.Stream {
		writeJSON(w, http.StatusOK, resp("completed", []any{item}, usage))
		return
	}

	// The item streams as it would from OpenAI: added in progress, its
	// text or arguments in two deltas, done, then the completed response.
	itemID := item["id"]
	pending := map[string]any{}
	for k, v := range item {
		pending[k] = v
	}
	pending["status"] = "in_progress"
	var events []map[string]any
	add := func(typ string, fields map[string]any) {
		ev := map[string]any{"type": typ}
		for k, v := range fields {
			ev[k] = v
		}
		events = append(events, ev)
	}
	add("response.created", map[string]any{"response": resp("in_progress", []any{}, nil)})
	add("response.in_progress", map[string]any{"response": resp("in_progress", []any{}, nil)})
	if t.move.call != nil {
		pending["arguments"] = ""
		add("response.output_item.added", map[string]any{"output_index": 0, "item": pending})
		for _, p := range pieces {
			add("response.function_call_arguments.delta", map[string]any{"item_id": itemID, "output_index": 0, "delta": p})
		}
		add("response.function_call_arguments.done", map[string]any{"item_id": itemID, "output_index": 0, "arguments": t.move.call.Arguments})
	} else {
		pending["content"] = []any{}
		part := map[string]any{"type": "output_text", "text": "", "annotations": []any{}}
		add("response.output_item.added", map[string]any{"output_index": 0, "item": pending})
		add("response.content_part.added", map[string]any{"item_id": itemID, "output_index": 0, "content_index": 0, "part": part})
		for _, p := range pieces {
			add("response.output_text.delta", map[string]any{"item_id": itemID, "output_index": 0, "content_index": 0, "delta": p})
		}
		add("response.output_text.done", map[string]any{"item_id": itemID, "output_index": 0, "content_index": 0, "text": t.move.final})
		done := map[string]any{"type": "output_text", "text": t.move.final, "annotations": []any{}}
		add("response.content_part.done", map[string]any{"item_id": itemID, "output_index": 0, "content_index": 0, "part": done})
	}
	add("response.output_item.done", map[string]any{"output_index": 0, "item": item})
	add("response.completed", map[string]any{"response": resp("completed", []any{item}, usage)})

	stream := newSSE(w)
	for i, ev := range events {
		ev["sequence_number"] = i
		if !stream.event(ev["type"].(string), ev) {
			return
		}
		if i == 0 && s.cut(w, log, fault) {
			return
		}
	}
}
