package webmcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/pairbench/pairbench"
)

// The names the agent sees: pi declares the tool as mcp__pairbench__webmcp.
const (
	ServerName = "pairbench"
	ToolName   = "webmcp"
	// Path is where the server answers streamable HTTP.
	Path = "/mcp"
)

// toolDescription is identical in both arms; it never says whether tools are
// registered.
const toolDescription = `Lists or invokes the WebMCP tools of the browser's current page.
{"action":"list"} returns each tool's name, description and inputSchema.
{"action":"invoke","tool":NAME,"arguments":{...}} runs one tool with the arguments its inputSchema describes and returns its result.`

const inputSchema = `{
  "type": "object",
  "properties": {
    "action": {"type": "string", "enum": ["list", "invoke"], "description": "list the page's tools, or invoke one"},
    "tool": {"type": "string", "description": "the tool to invoke (invoke only)"},
    "arguments": {"type": "object", "description": "the tool's arguments (invoke only)"}
  },
  "required": ["action"],
  "additionalProperties": false
}`

// DefaultInvokeTimeout bounds one tool invocation when Options leaves it
// zero. It is below pi's 60 s MCP request timeout, so a hanging tool reaches
// the agent as this server's error rather than as a dropped request.
const DefaultInvokeTimeout = 50 * time.Second

// maxErrorLen bounds the error text kept per invocation.
const maxErrorLen = 500

// Options configures a Server. The zero value is usable.
type Options struct {
	// Addr is where Start listens; "127.0.0.1:0" (a free loopback port) when
	// empty.
	Addr string
	// InvokeTimeout bounds one invocation; DefaultInvokeTimeout when zero.
	InvokeTimeout time.Duration
	// Log receives the server's diagnostics; nothing is logged when nil.
	Log *slog.Logger
	// Now is the clock invocation durations are read from; time.Now when nil.
	Now func() time.Time
}

// Server is pairbench's MCP server for one trial: one tool, webmcp, over a
// Page. It records every invocation.
type Server struct {
	page Page
	opts Options
	mcp  *mcp.Server

	mu          sync.Mutex
	invocations []pairbench.Invocation
	starts      []time.Time // when each invocation began
	lists       int

	ln   net.Listener
	http *http.Server
	done chan struct{}
}

// New returns a server over page that is not listening yet; see Start and
// Handler.
func New(page Page, opts Options) *Server {
	if opts.Addr == "" {
		opts.Addr = "127.0.0.1:0"
	}
	if opts.InvokeTimeout <= 0 {
		opts.InvokeTimeout = DefaultInvokeTimeout
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	s := &Server{page: page, opts: opts}
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: ServerName, Version: "1"}, nil)
	s.mcp.AddTool(&mcp.Tool{
		Name:        ToolName,
		Description: toolDescription,
		InputSchema: json.RawMessage(inputSchema),
	}, s.handle)
	return s
}

// Handler serves the MCP streamable HTTP transport at any path.
func (s *Server) Handler() http.Handler {
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.mcp }, nil)
}

// Start listens on Options.Addr and serves Handler at Path until Close.
func (s *Server) Start() error {
	ln, err := net.Listen("tcp", s.opts.Addr)
	if err != nil {
		return fmt.Errorf("webmcp: listen: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle(Path, s.Handler())
	s.ln = ln
	s.http = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	s.done = make(chan struct{})
	go func() {
		defer close(s.done)
		if err := s.http.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.opts.Log.Error("webmcp: serve", "err", err)
		}
	}()
	return nil
}

// URL is the server's streamable HTTP endpoint, valid after Start:
// http://127.0.0.1:PORT/mcp.
func (s *Server) URL() string {
	return "http://" + s.ln.Addr().String() + Path
}

// Port is the loopback port Start listens on (the sandbox forwards it).
func (s *Server) Port() int {
	return s.ln.Addr().(*net.TCPAddr).Port
}

// Close stops serving and drops open connections. Recorded invocations stay
// readable.
func (s *Server) Close() error {
	if s.http == nil {
		return nil
	}
	err := s.http.Close()
	<-s.done
	return err
}

// Invocations returns every invoke call so far, in order.
func (s *Server) Invocations() []pairbench.Invocation {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]pairbench.Invocation(nil), s.invocations...)
}

// Starts returns when each invoke call of Invocations began, in the same
// order.
func (s *Server) Starts() []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Time(nil), s.starts...)
}

// Lists returns how many times the agent listed the page's tools.
func (s *Server) Lists() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lists
}

// request is the webmcp tool's input.
type request struct {
	Action    string          `json:"action"`
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
}

func (s *Server) handle(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var in request
	if args := req.Params.Arguments; len(args) > 0 {
		if err := json.Unmarshal(args, &in); err != nil {
			return failure("webmcp: the input must be an object like {\"action\":\"list\"}: " + err.Error()), nil
		}
	}
	switch in.Action {
	case "list":
		return s.list(ctx), nil
	case "invoke":
		return s.invoke(ctx, in), nil
	default:
		return failure(`webmcp: "action" must be "list" or "invoke"`), nil
	}
}

// listedTool is what a listing shows of each tool.
type listedTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"inputSchema,omitempty"`
}

func (s *Server) list(ctx context.Context) *mcp.CallToolResult {
	s.mu.Lock()
	s.lists++
	s.mu.Unlock()
	tools, err := s.page.LiveTools(ctx)
	if err != nil {
		s.opts.Log.Warn("webmcp: list", "err", err)
		return failure("webmcp: could not list the page's tools: " + err.Error())
	}
	listed := struct {
		Tools []listedTool `json:"tools"`
	}{Tools: make([]listedTool, 0, len(tools))}
	for _, t := range tools {
		listed.Tools = append(listed.Tools, listedTool{Name: t.Name, Description: t.Description, InputSchema: t.InputSchema})
	}
	text, err := json.Marshal(listed)
	if err != nil {
		return failure("webmcp: encode the listing: " + err.Error())
	}
	return &mcp.CallToolResult{
		Content:           []mcp.Content{&mcp.TextContent{Text: string(text)}},
		StructuredContent: json.RawMessage(text),
	}
}

func (s *Server) invoke(ctx context.Context, in request) *mcp.CallToolResult {
	start := s.opts.Now()
	inv := pairbench.Invocation{Tool: in.Tool}
	result, failed := s.run(ctx, in, &inv)
	inv.MS = s.opts.Now().Sub(start).Milliseconds()
	if failed != "" {
		inv.Status, inv.Error = "error", truncate(failed)
	} else if why, ok := toolReportedError(result.Text); ok {
		inv.Status, inv.Error = "error", truncate(why)
	} else {
		inv.Status = "ok"
	}
	s.mu.Lock()
	s.invocations = append(s.invocations, inv)
	s.starts = append(s.starts, start)
	s.mu.Unlock()
	s.opts.Log.Debug("webmcp: invoke", "tool", inv.Tool, "status", inv.Status, "ms", inv.MS, "registered", inv.Registered, "err", inv.Error)

	if failed != "" {
		return failure(failed)
	}
	out := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: result.Text}}}
	// An object result also travels whole as structuredContent: clients cut
	// long text for the model but keep this for the transcript.
	if obj := bytes.TrimSpace([]byte(result.Text)); len(obj) > 0 && obj[0] == '{' && json.Valid(obj) {
		out.StructuredContent = json.RawMessage(obj)
	}
	return out
}

// run invokes the tool and returns its result, or why there is none.
func (s *Server) run(ctx context.Context, in request, inv *pairbench.Invocation) (Result, string) {
	if in.Tool == "" {
		return Result{}, `webmcp: invoke needs "tool", the name of a tool from {"action":"list"}`
	}
	args := bytes.TrimSpace(in.Arguments)
	if len(args) == 0 || bytes.Equal(args, []byte("null")) {
		args = []byte("{}")
	}
	if args[0] != '{' {
		return Result{}, `webmcp: "arguments" must be an object`
	}
	ctx, cancel := context.WithTimeout(ctx, s.opts.InvokeTimeout)
	defer cancel()
	res, err := s.page.InvokeTool(ctx, in.Tool, json.RawMessage(args))
	inv.Registered = res.Registered
	switch {
	case err != nil && errors.Is(err, context.DeadlineExceeded):
		return Result{}, fmt.Sprintf("webmcp: %s did not finish within %s", in.Tool, s.opts.InvokeTimeout)
	case err != nil:
		return Result{}, fmt.Sprintf("webmcp: could not invoke %s: %v", in.Tool, err)
	case res.Exception != "":
		return Result{}, fmt.Sprintf("%s failed: %s", in.Tool, res.Exception)
	}
	return res, ""
}

// toolReportedError reports whether a result the tool returned says it
// failed: an object with "status":"error", or an MCP-style result with
// "isError":true. It returns the failure's message.
func toolReportedError(text string) (string, bool) {
	var r struct {
		Status  any    `json:"status"`
		Error   any    `json:"error"`
		Message string `json:"message"`
		IsError bool   `json:"isError"`
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	if json.Unmarshal([]byte(text), &r) != nil {
		return "", false
	}
	switch {
	case r.Status == "error":
		switch e := r.Error.(type) {
		case string:
			if e != "" {
				return e, true
			}
		case map[string]any:
			if m, ok := e["message"].(string); ok && m != "" {
				return m, true
			}
		}
		if r.Message != "" {
			return r.Message, true
		}
		return text, true
	case r.IsError:
		if len(r.Content) > 0 && r.Content[0].Text != "" {
			return r.Content[0].Text, true
		}
		return text, true
	}
	return "", false
}

func failure(msg string) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: msg}}}
}

func truncate(s string) string {
	if len(s) <= maxErrorLen {
		return s
	}
	return s[:maxErrorLen] + "…"
}
