package model

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// response is one answer to a chat-completions request.
type response struct {
	id      string
	created int64
	move    move
	callID  string
	usage   usage
}

func (r response) finishReason() string {
	if r.move.call != nil {
		return "tool_calls"
	}
	return "stop"
}

// completion is the non-streamed form.
func (r response) completion() completion {
	msg := responseMessage{Role: "assistant"}
	if r.move.call != nil {
		msg.ToolCalls = []toolCall{{ID: r.callID, Type: "function", Function: *r.move.call}}
	} else {
		text := r.move.final
		msg.Content = &text
	}
	return completion{
		ID: r.id, Object: "chat.completion", Created: r.created, Model: ID, SystemFingerprint: Fingerprint,
		Choices: []completionChoice{{Index: 0, Message: msg, FinishReason: r.finishReason()}},
		Usage:   r.usage,
	}
}

// chunks is the streamed form: a role delta, the content or the tool call in
// pieces, a delta carrying finish_reason, and a usage chunk with no choices.
// The pieces are split at fixed places so clients must assemble deltas.
func (r response) chunks() []chunk {
	base := func(d delta, finish *string) chunk {
		return chunk{
			ID: r.id, Object: "chat.completion.chunk", Created: r.created, Model: ID, SystemFingerprint: Fingerprint,
			Choices: []chunkChoice{{Index: 0, Delta: d, FinishReason: finish}},
		}
	}
	var out []chunk
	if c := r.move.call; c != nil {
		zero := 0
		first, rest := split(c.Arguments)
		out = append(out,
			base(delta{Role: "assistant", ToolCalls: []toolCall{{Index: &zero, ID: r.callID, Type: "function", Function: functionCall{Name: c.Name, Arguments: first}}}}, nil),
			base(delta{ToolCalls: []toolCall{{Index: &zero, Function: functionCall{Arguments: rest}}}}, nil),
		)
	} else {
		first, rest := split(r.move.final)
		out = append(out, base(delta{Role: "assistant", Content: first}, nil), base(delta{Content: rest}, nil))
	}
	finish := r.finishReason()
	out = append(out, base(delta{}, &finish))
	u := r.usage
	out = append(out, chunk{
		ID: r.id, Object: "chat.completion.chunk", Created: r.created, Model: ID, SystemFingerprint: Fingerprint,
		Choices: []chunkChoice{}, Usage: &u,
	})
	return out
}

// split cuts s in two at a rune boundary near its middle.
func split(s string) (string, string) {
	i := len(s) / 2
	for i > 0 && i < len(s) && !isRuneStart(s[i]) {
		i--
	}
	return s[:i], s[i:]
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

// sse writes server-sent events, flushing each as it goes.
type sse struct {
	w       http.ResponseWriter
	flusher http.Flusher
}

// newSSE starts an event stream on w.
func newSSE(w http.ResponseWriter) *sse {
	h := w.Header()
	if h.Get("Content-Type") != "text/event-stream" {
		h.Set("Content-Type", "text/event-stream")
		h.Set("Cache-Control", "no-cache")
		h.Set("Connection", "keep-alive")
		w.WriteHeader(http.StatusOK)
	}
	f, _ := w.(http.Flusher)
	return &sse{w: w, flusher: f}
}

// data writes v as one "data: JSON" event; event, when not empty, names it
// first. It reports false when the client went away.
func (s *sse) data(v any) bool { return s.event("", v) }

func (s *sse) event(name string, v any) bool {
	b, err := json.Marshal(v)
	if err != nil {
		return false // unreachable: events hold only strings, numbers and maps of them
	}
	if name != "" {
		return s.raw("event: " + name + "\ndata: " + string(b) + "\n\n")
	}
	return s.raw("data: " + string(b) + "\n\n")
}

func (s *sse) raw(text string) bool {
	if _, err := fmt.Fprint(s.w, text); err != nil {
		return false // the client went away
	}
	if s.flusher != nil {
		s.flusher.Flush()
	}
	return true
}
