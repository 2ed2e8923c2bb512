// Package model is pairbench's scripted model: a deterministic model server
// that plays a competent agent for the intents it is given, in the three
// wire formats the benched agents speak. It is the embedded default model, so a bench runs
// on a machine with no provider key; it is not an LLM and says so in every
// response (model id "pairbench-scripted", system_fingerprint "scripted",
// and an X-Pairbench-Model header).
//
// It serves POST /v1/chat/completions (OpenAI chat completions, pi's;
// streamed as chat.completion.chunk events), POST /v1/responses (the OpenAI
// Responses API, Codex's; streamed as response.* events, MCP tools as
// namespaces) and POST /v1/messages (the Anthropic Messages API, Claude
// Code's; streamed as message_start ... message_stop events), each also
// answered as one JSON object when not streamed, and GET /v1/models. It
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
	"io"
	"log/slog"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/pairbench/pairbench/intents"
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
	// stream after its first event: no finish reason, no usage, no end
	// marker, as a provider whose connection drops. Status and Message are
	// unused.
	MidStream bool
	// Garbage, for a streamed request, answers 200 and sends, after the
	// first event, one that is not JSON, then ends the stream.
	Garbage bool
	// Stall accepts the request and never answers, until the client gives
	// up: a provider that hangs.
	Stall bool
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
	s.mux.HandleFunc("POST /v1/responses", s.responses)
	s.mux.HandleFunc("POST /v1/messages", s.messages)
	s.mux.HandleFunc("GET /v1/models", s.models)
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		openAIError(w, http.StatusNotFound, "not_found",
			fmt.Sprintf("%s %s: the scripted model serves POST /v1/chat/completions, /v1/responses and /v1/messages, and GET /v1/models", r.Method, r.URL.Path))
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
	n, log, fault, failed := s.begin(w, r, openAIError)
	if failed {
		return
	}
	var req chatRequest
	if !decode(w, r, &req, openAIError) {
		return
	}
	if req.Model != ID {
		openAIError(w, http.StatusNotFound, "model_not_found", unknownModel(req.Model))
		return
	}
	t, in, ok := s.decide(chatConversation(req.Messages, req.Tools), "call_scripted_")
	if !ok {
		openAIError(w, http.StatusBadRequest, "unknown_intent", errUnknownIntent)
		return
	}
	logMove(log, in, t)
	resp := response{
		id:      fmt.Sprintf("chatcmpl-scripted-%d", n),
		created: s.opts.Now().Unix(),
		move:    t.move,
		callID:  t.callID,
		usage:   usage{PromptTokens: t.input, CompletionTokens: t.output, TotalTokens: t.input + t.output},
	}
	if !req.Stream {
		writeJSON(w, http.StatusOK, resp.completion())
		return
	}
	stream := newSSE(w)
	chunks := resp.chunks()
	for i, c := range chunks {
		if !stream.data(c) {
			return
		}
		if i == 0 && s.cut(w, log, fault) {
			return
		}
	}
	stream.raw("data: [DONE]\n\n")
}

// begin numbers a request and applies the fault injected for it: a failure
// status is answered here (failed true) through writeErr; a stall holds the
// request until the client goes. The fault returned is one that acts
// mid-stream.
func (s *Server) begin(w http.ResponseWriter, r *http.Request, writeErr errorWriter) (n int, log *slog.Logger, fault *Fault, failed bool) {
	n = int(s.seq.Add(1))
	log = s.opts.Logger.With("request", n, "path", r.URL.Path)
	if s.opts.Fault != nil {
		fault = s.opts.Fault(n)
	}
	switch {
	case fault == nil || fault.MidStream || fault.Garbage:
		return n, log, fault, false
	case fault.Stall:
		log.Debug("scripted model: injected stall")
		// Reading the body lets the server notice the client hang up.
		_, _ = io.Copy(io.Discard, http.MaxBytesReader(w, r.Body, maxBody))
		<-r.Context().Done()
		return n, log, nil, true
	}
	status := fault.Status
	if status < 400 || status > 599 {
		status = http.StatusInternalServerError
	}
	msg := fault.Message
	if msg == "" {
		msg = fmt.Sprintf("injected failure (status %d) on request %d", status, n)
	}
	log.Debug("scripted model: injected fault", "status", status)
	writeErr(w, status, "injected_fault", msg)
	return n, log, nil, true
}

// cut applies a mid-stream fault after the first event of a stream: the
// stream ends there (MidStream) or gets an event that is not JSON and ends
// (Garbage). It reports whether the stream must stop.
func (s *Server) cut(w http.ResponseWriter, log *slog.Logger, fault *Fault) bool {
	switch {
	case fault == nil:
		return false
	case fault.Garbage:
		log.Debug("scripted model: injected garbage")
		newSSE(w).raw("data: {\"truncated\": \n\n")
	default:
		log.Debug("scripted model: injected fault", "mid_stream", true)
	}
	return true
}

func logMove(log *slog.Logger, in *intents.Intent, t turn) {
	id := "smoke"
	if in != nil {
		id = in.ID
	}
	if t.move.call != nil {
		log.Debug("scripted model: tool call", "intent", id, "tool", t.move.call.Name)
		return
	}
	log.Debug("scripted model: final answer", "intent", id)
}

func unknownModel(model string) string {
	return fmt.Sprintf("model %q does not exist; the scripted model is %q", model, ID)
}

// errorWriter answers a request with an error in its API's format.
type errorWriter func(w http.ResponseWriter, status int, code, msg string)

// decode reads a JSON request body, answering a bad one itself.
func decode(w http.ResponseWriter, r *http.Request, v any, writeErr errorWriter) bool {
	err := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody)).Decode(v)
	if err == nil {
		return true
	}
	status := http.StatusBadRequest
	if _, tooBig := errors.AsType[*http.MaxBytesError](err); tooBig {
		status = http.StatusRequestEntityTooLarge
	}
	writeErr(w, status, "bad_request", "decode request: "+err.Error())
	return false
}

func openAIError(w http.ResponseWriter, status int, code, msg string) {
	typ := "invalid_request_error"
	switch {
	case status == http.StatusTooManyRequests:
		typ = "rate_limit_error"
	case status >= 500:
		typ = "server_error"
	}
	writeJSON(w, status, apiError{Error: apiErrorBody{Message: msg, Type: typ, Code: code}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	// The client may have gone; there is nobody left to tell.
	_ = json.NewEncoder(w).Encode(v)
}
