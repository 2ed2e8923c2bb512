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

// stream writes the chunks as server-sent events, each "data: JSON" and a
// blank line, flushed one by one, then "data: [DONE]". When cut > 0 it stops
// after cut chunks instead, without [DONE].
func (r response) stream(w http.ResponseWriter, cut int) {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	chunks := r.chunks()
	if cut > 0 {
		chunks = chunks[:min(cut, len(chunks))]
	}
	for _, c := range chunks {
		b, err := json.Marshal(c)
		if err != nil {
			return // unreachable: chunks hold only strings and numbers
		}
		if _, err := fmt.Fprintf(w, "data: %s\n\n", b); err != nil {
			return // the client went away
		}
		if flusher != nil {
			flusher.Flush()
		}
	}
	if cut > 0 {
		return
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
	if flusher != nil {
		flusher.Flush()
	}
}
