// Package model is pairbench's scripted model: a deterministic,
// OpenAI-compatible chat-completions server that plays a competent agent for
// the intents it is given. It is the embedded default model, so a bench runs
// on a machine with no provider key; it is not an LLM and says so in every
// response (model id "pairbench-scripted", system_fingerprint "scripted",
// and an X-Pairbench-Model header).
//
// It serves POST /v1/chat/completions (streamed as chat.completion.chunk
// server-sent events, or as one JSON object) and GET /v1/models. It
// recognises the intent by its prompt in the user message and follows the
// script described in script.go: list the page's WebMCP tools, invoke the
// entry tool when it is listed, otherwise drive the page through the
// baseline's browser steps, then answer from what it read. It never learns
// which arm it is in except from what the tools show it.
//
// The package imports intents for the Intent and Baseline it plays; intents
// is a leaf package of pure types and validation, so this adds no cycle and
// saves the runner a copy of the same fields.
package model

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/pairbench/pairbench/intents"
	"github.com/pairbench/pairbench/runner"
)

// ID is the scripted model's id, as requests must name it and responses
// report it.
const ID = "pairbench-scripted"

// Fingerprint is the system_fingerprint of every response.
const Fingerprint = "scripted"

// maxBody bounds a request body; a request carrying ~25 tool schemas and a
// few hundred KB of tool results stays well under it.
const maxBody = 32 << 20

// Fault is a failure the server injects instead of answering.
type Fault struct {
	// Status is the HTTP status to answer with (e.g. 429, 500, 503); one
	// that is not a 4xx or 5xx status reads as 500.
	Status int
	// Message is the error message; empty gives a generic one.
	Message string
	// MidStream, for a streamed request, answers 200 instead and cuts the
	// stream after its first chunk: no finish_reason, no usage, no [DONE],
	// as a provider whose connection drops. Status and Message are unused.
	MidStream bool
}

// Options configure a Server. The zero value is usable.
type Options struct {
	// Logger receives one debug line per request; nil discards.
	Logger *slog.Logger
	// Now stamps responses' created field; nil uses time.Now.
	Now func() time.Time
	// Fault, when set, is asked before each chat-completions request with
	// the request's 1-based sequence number; a non-nil Fault fails that
	// request with an OpenAI-style error body. It lets the runner's tests
	// cover a model that returns errors.
	Fault func(n int) *Fault
}

// FailFrom returns a Fault function that fails every request from the n-th
// on with status, e.g. FailFrom(1, 500) for a model that always errs.
func FailFrom(n, status int) func(int) *Fault {
	return func(i int) *Fault {
		if i >= n {
			return &Fault{Status: status}
		}
		return nil
	}
}

// Server is the scripted model. It is an http.Handler and safe for
// concurrent use; it keeps no conversation state.
type Server struct {
	intents []intents.Intent
	opts    Options
	mux     *http.ServeMux
	seq     atomic.Int64
}

// New returns a scripted model for intents, whose prompts must be resolved
// (fixtures substituted) exactly as the agent will be prompted.
func New(in []intents.Intent, opts Options) *Server {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	s := &Server{intents: in, opts: opts, mux: http.NewServeMux()}
	s.mux.HandleFunc("POST /v1/chat/completions", s.chat)
	s.mux.HandleFunc("GET /v1/models", s.models)
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "invalid_request_error", "not_found",
			fmt.Sprintf("%s %s: the scripted model serves POST /v1/chat/completions and GET /v1/models", r.Method, r.URL.Path))
	})
	return s
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Pairbench-Model", "scripted")
	s.mux.ServeHTTP(w, r)
}

func (s *Server) models(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, modelList{Object: "list", Data: []modelInfo{{
		ID: ID, Object: "model", OwnedBy: "pairbench (scripted, not an LLM)",
	}}})
}

func (s *Server) chat(w http.ResponseWriter, r *http.Request) {
	n := int(s.seq.Add(1))
	log := s.opts.Logger.With("request", n)
	var fault *Fault
	if s.opts.Fault != nil {
		fault = s.opts.Fault(n)
	}
	if fault != nil && !fault.MidStream {
		status := fault.Status
		if status < 400 || status > 599 {
			status = http.StatusInternalServerError
		}
		msg := fault.Message
		if msg == "" {
			msg = fmt.Sprintf("injected failure (status %d) on request %d", status, n)
		}
		log.Debug("scripted model: injected fault", "status", status)
		writeError(w, status, errorType(status), "injected_fault", msg)
		return
	}

	var req chatRequest
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody)).Decode(&req); err != nil {
		status := http.StatusBadRequest
		if _, tooBig := errors.AsType[*http.MaxBytesError](err); tooBig {
			status = http.StatusRequestEntityTooLarge
		}
		writeError(w, status, "invalid_request_error", "bad_request", "decode request: "+err.Error())
		return
	}
	if req.Model != ID {
		writeError(w, http.StatusNotFound, "invalid_request_error", "model_not_found",
			fmt.Sprintf("model %q does not exist; the scripted model is %q", req.Model, ID))
		return
	}
	if smoke(req.Messages) {
		// The runner's smoke gate: a zero-tool run that must just answer.
		resp := response{id: fmt.Sprintf("chatcmpl-scripted-%d", n), created: s.opts.Now().Unix(),
			move: move{final: "ready"}}
		resp.usage = countUsage(req, resp.move)
		if req.Stream {
			resp.stream(w, 0)
			return
		}
		writeJSON(w, http.StatusOK, resp.completion())
		return
	}
	in, ok := matchIntent(s.intents, req.Messages)
	if !ok {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "unknown_intent",
			"the scripted model knows no intent whose prompt is in the user message; it only plays the intents it was started with")
		return
	}
	tools := make(toolset, len(req.Tools))
	for _, t := range req.Tools {
		params := make([]string, 0, len(t.Function.Parameters.Properties))
		for p := range t.Function.Parameters.Properties {
			params = append(params, p)
		}
		tools[t.Function.Name] = params
	}
	obs := observations(req.Messages)
	mv := next(in, tools, obs)
	var callID string
	if mv.call != nil {
		// Unique within the conversation: one call per model turn.
		callID = fmt.Sprintf("call_scripted_%d", len(obs)+1)
		log.Debug("scripted model: tool call", "intent", in.ID, "tool", mv.call.Name)
	} else {
		log.Debug("scripted model: final answer", "intent", in.ID)
	}
	resp := response{
		id:      fmt.Sprintf("chatcmpl-scripted-%d", n),
		created: s.opts.Now().Unix(),
		move:    mv,
		callID:  callID,
		usage:   countUsage(req, mv),
	}
	if req.Stream {
		cut := 0
		if fault != nil {
			log.Debug("scripted model: injected fault", "mid_stream", true)
			cut = 1
		}
		resp.stream(w, cut)
		return
	}
	writeJSON(w, http.StatusOK, resp.completion())
}

// smoke reports whether the conversation is the runner's smoke check.
func smoke(msgs []chatMessage) bool {
	for _, m := range msgs {
		if m.Role == "user" && strings.Contains(m.text(), runner.SmokePrompt) {
			return true
		}
	}
	return false
}

// countUsage counts tokens deterministically as a quarter of the bytes, at
// least one: the prompt from every message's text, tool calls and the
// declared tools' names, the completion from the move's text or call.
func countUsage(req chatRequest, mv move) usage {
	in := 0
	for _, m := range req.Messages {
		in += 4 + len(m.text())
		for _, c := range m.ToolCalls {
			in += len(c.Function.Name) + len(c.Function.Arguments)
		}
	}
	for _, t := range req.Tools {
		in += 16 + len(t.Function.Name)
	}
	out := len(mv.final)
	if mv.call != nil {
		out += len(mv.call.Name) + len(mv.call.Arguments)
	}
	u := usage{PromptTokens: max(1, (in+3)/4), CompletionTokens: max(1, (out+3)/4)}
	u.TotalTokens = u.PromptTokens + u.CompletionTokens
	return u
}

func errorType(status int) string {
	switch {
	case status == http.StatusTooManyRequests:
		return "rate_limit_error"
	case status >= 500:
		return "server_error"
	default:
		return "invalid_request_error"
	}
}

func writeError(w http.ResponseWriter, status int, typ, code, msg string) {
	writeJSON(w, status, apiError{Error: apiErrorBody{Message: msg, Type: typ, Code: code}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	// The client may have gone; there is nobody left to tell.
	_ = json.NewEncoder(w).Encode(v)
}
