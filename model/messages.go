package model

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// The Anthropic Messages API (POST /v1/messages), as Claude Code speaks it:
// content as a string or blocks (text, tool_use, tool_result), tools with
// input schemas, streamed as message_start, content_block_start/delta/stop,
// message_delta and message_stop events.

type messagesRequest struct {
	Model    string             `json:"model"`
	Messages []anthropicMessage `json:"messages"`
	Tools    []anthropicTool    `json:"tools,omitempty"`
	Stream   bool               `json:"stream,omitempty"`
}

type anthropicMessage struct {
	Role string `json:"role"`
	// Content is a string or a list of blocks.
	Content json.RawMessage `json:"content"`
}

type anthropicBlock struct {
	Type string `json:"type"`
	Text string `json:"text,omitempty"`
	// tool_use
	ID    string          `json:"id,omitempty"`
	Name  string          `json:"name,omitempty"`
	Input json.RawMessage `json:"input,omitempty"`
	// tool_result: Content is a string or a list of text blocks.
	ToolUseID string          `json:"tool_use_id,omitempty"`
	Content   json.RawMessage `json:"content,omitempty"`
}

type anthropicTool struct {
	Name        string `json:"name"`
	InputSchema struct {
		Properties map[string]json.RawMessage `json:"properties"`
	} `json:"input_schema"`
	// DeferLoading marks a tool the model does not see until a tool
	// search loads it; the scripted model searches for none.
	DeferLoading bool `json:"defer_loading,omitempty"`
}

// blocks reads a content field: a string is one text block.
func blocks(content json.RawMessage) []anthropicBlock {
	var s string
	if json.Unmarshal(content, &s) == nil {
		return []anthropicBlock{{Type: "text", Text: s}}
	}
	var bs []anthropicBlock
	_ = json.Unmarshal(content, &bs) // anything else reads as no content
	return bs
}

func blockText(bs []anthropicBlock) string {
	var parts []string
	for _, b := range bs {
		if b.Type == "text" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}

func messagesConversation(req messagesRequest) conversation {
	var c conversation
	var cs calls
	for _, m := range req.Messages {
		bs := blocks(m.Content)
		text := blockText(bs)
		c.promptBytes += 4 + len(text)
		if m.Role == "user" && text != "" {
			c.user = append(c.user, text)
		}
		for _, b := range bs {
			switch b.Type {
			case "tool_use":
				cs.call(b.ID)
				c.promptBytes += len(b.Name) + len(b.Input)
			case "tool_result":
				result := blockText(blocks(b.Content))
				cs.result(b.ToolUseID, result)
				c.promptBytes += len(result)
			}
		}
	}
	c.obs = cs.observations()
	for _, t := range req.Tools {
		if !t.DeferLoading {
			c.declare(t.Name, keys(t.InputSchema.Properties))
		}
	}
	return c
}

func (s *Server) messages(w http.ResponseWriter, r *http.Request) {
	n, log, fault, failed := s.begin(w, r, anthropicError)
	if failed {
		return
	}
	var req messagesRequest
	if !decode(w, r, &req, anthropicError) {
		return
	}
	if req.Model != ID {
		anthropicError(w, http.StatusNotFound, "", unknownModel(req.Model))
		return
	}
	t, in, ok := s.decide(messagesConversation(req), "toolu_scripted_")
	if !ok {
		anthropicError(w, http.StatusBadRequest, "", errUnknownIntent)
		return
	}
	logMove(log, in, t)
	id := fmt.Sprintf("msg_scripted_%d", n)
	block := anthropicBlock{Type: "text", Text: t.move.final}
	stop := "end_turn"
	if c := t.move.call; c != nil {
		block = anthropicBlock{Type: "tool_use", ID: t.callID, Name: c.Name, Input: json.RawMessage(c.Arguments)}
		stop = "tool_use"
	}
	if !req.Stream {
		writeJSON(w, http.StatusOK, map[string]any{
			"id": id, "type": "message", "role": "assistant", "model": ID,
			"content": []anthropicBlock{block}, "stop_reason": stop, "stop_sequence": nil,
			"usage": map[string]int{"input_tokens": t.input, "output_tokens": t.output},
		})
		return
	}

	// The block's text or arguments arrive in two deltas, so clients must
	// assemble them.
	start, delta := map[string]any{"type": "text", "text": ""}, map[string]any{"type": "text_delta"}
	first, rest := split(t.move.final)
	if c := t.move.call; c != nil {
		start = map[string]any{"type": "tool_use", "id": t.callID, "name": c.Name, "input": map[string]any{}}
		delta = map[string]any{"type": "input_json_delta"}
		first, rest = split(c.Arguments)
	}
	withPiece := func(piece string) map[string]any {
		d := map[string]any{}
		for k, v := range delta {
			d[k] = v
		}
		if d["type"] == "text_delta" {
			d["text"] = piece
		} else {
			d["partial_json"] = piece
		}
		return map[string]any{"type": "content_block_delta", "index": 0, "delta": d}
	}
	events := []struct {
		name string
		data any
	}{
		{"message_start", map[string]any{"type": "message_start", "message": map[string]any{
			"id": id, "type": "message", "role": "assistant", "model": ID, "content": []any{},
			"stop_reason": nil, "stop_sequence": nil,
			"usage": map[string]int{"input_tokens": t.input, "output_tokens": 1},
		}}},
		{"content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": start}},
		{"content_block_delta", withPiece(first)},
		{"content_block_delta", withPiece(rest)},
		{"content_block_stop", map[string]any{"type": "content_block_stop", "index": 0}},
		{"message_delta", map[string]any{"type": "message_delta",
			"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
			"usage": map[string]int{"output_tokens": t.output}}},
		{"message_stop", map[string]any{"type": "message_stop"}},
	}
	stream := newSSE(w)
	for i, ev := range events {
		if !stream.event(ev.name, ev.data) {
			return
		}
		if i == 0 && s.cut(w, log, fault) {
			return
		}
	}
}

// anthropicError answers in the Messages API's error format; code is
// unused (the format has none).
func anthropicError(w http.ResponseWriter, status int, _ string, msg string) {
	typ := "invalid_request_error"
	switch {
	case status == http.StatusNotFound:
		typ = "not_found_error"
	case status == http.StatusRequestEntityTooLarge:
		typ = "request_too_large"
	case status == http.StatusTooManyRequests:
		typ = "rate_limit_error"
	case status == 529:
		typ = "overloaded_error"
	case status >= 500:
		typ = "api_error"
	}
	writeJSON(w, status, map[string]any{"type": "error", "error": map[string]string{"type": typ, "message": msg}})
}
