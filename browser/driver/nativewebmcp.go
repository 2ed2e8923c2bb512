package driver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/chromedp/cdproto"
	"github.com/chromedp/cdproto/cdp"
	jsonv2 "github.com/chromedp/cdproto/cdp/jsonv2"
	"github.com/chromedp/cdproto/webmcp"

	"github.com/pairbench/pairbench/browser/internal/cdpconn"
	pagetools "github.com/pairbench/pairbench/runner/webmcp"
)

// maxResponses and maxResponseBytes bound the invocation responses kept
// for InvokeTool to claim: one arrives before its caller waits only in a
// short race, but a page may invoke its own tools without end.
const (
	maxResponses     = 64
	maxResponseBytes = 64 << 20
)

// response is how the browser answered an invocation.
type response struct {
	id     string
	status webmcp.InvocationStatus
	output jsonv2.Value
	err    string
}

// noteInvocation keeps what the domain said of an invocation for
// InvokeTool, while one waits: the response, or only that the call started
// (nil); b.mu must be held. Everyone waiting is woken.
func (b *Browser) noteInvocation(r *response) {
	if r != nil && b.awaiting > 0 {
		b.responses = append(b.responses, *r)
		// The newest stays, whatever its size: it may be the caller's.
		size := len(r.output) + len(r.err)
		for i := len(b.responses) - 2; i >= 0; i-- {
			size += len(b.responses[i].output) + len(b.responses[i].err)
			if size > maxResponseBytes || len(b.responses)-i > maxResponses {
				b.responses = slices.Delete(b.responses, 0, i+1)
				break
			}
		}
	}
	if b.invocationCh != nil {
		close(b.invocationCh)
		b.invocationCh = nil
	}
}

// responseOf builds the response of a toolResponded event.
func responseOf(ev *webmcp.EventToolResponded) *response {
	r := &response{id: ev.InvocationID, status: ev.Status, output: ev.Output, err: ev.ErrorText}
	if r.err == "" && ev.Exception != nil {
		r.err = ev.Exception.Description
		if r.err == "" {
			r.err = string(ev.Exception.Value)
		}
		// The description holds the stack; the agent gets the message.
		r.err, _, _ = strings.Cut(r.err, "\n")
	}
	return r
}

// snapshot returns the tools the browser's WebMCP has on tab t, every frame:
// WebMCP.enable on a session where it is on already fires one toolsAdded
// with every tool registered, before its reply (an empty page fires none),
// and the events before a reply are handled once conn.drained returns. The
// tab's record of frames (WebMCPEnv) is set from it, since the domain
// reports no removal when a document goes.
func (b *Browser) snapshot(ctx context.Context, t *tab) ([]*webmcp.Tool, error) {
	b.snapMu.Lock()
	defer b.snapMu.Unlock()
	if err := b.conn.Drained(ctx); err != nil {
		return nil, err
	}
	b.mu.Lock()
	ft := b.webmcpTools(t.session)
	ft.snap = []*webmcp.Tool{}
	b.mu.Unlock()
	_, err := cdpconn.Send(ctx, b.conn, t.session, webmcp.Enable, cdp.Empty{})
	if err == nil {
		err = b.conn.Drained(ctx)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	ft = b.webmcpTools(t.session)
	tools := ft.snap
	ft.snap = nil
	if err != nil {
		return nil, fmt.Errorf("list the browser's WebMCP tools: %w", err)
	}
	ft.answered = true
	clear(ft.frames)
	ft.count = 0
	for _, tool := range tools {
		ft.add(tool)
	}
	return tools, nil
}

// nativeTools lists the tools of t's main frame as the browser's WebMCP
// reports them, each marked Registered when pairbench's registry registered
// it there (a form tool never is).
func (b *Browser) nativeTools(ctx context.Context, t *tab, l *listing) ([]pagetools.Tool, []*webmcp.Tool, error) {
	all, err := b.snapshot(ctx, t)
	if err != nil {
		return nil, nil, err
	}
	var main []*webmcp.Tool
	out := []pagetools.Tool{}
	for _, tool := range all {
		if string(tool.FrameID) != string(t.id) || slices.ContainsFunc(main, func(m *webmcp.Tool) bool { return m.Name == tool.Name }) {
			continue
		}
		main = append(main, tool)
		pt := pagetools.Tool{Name: tool.Name, Description: tool.Description,
			Registered: tool.BackendNodeID == 0 && slices.Contains(l.Registered, tool.Name)}
		if len(tool.InputSchema) > 0 && json.Valid(tool.InputSchema) {
			pt.InputSchema = json.RawMessage(slices.Clone(tool.InputSchema))
		}
		if a := tool.Annotations; a != nil {
			pt.ReadOnly = a.ReadOnly
		}
		out = append(out, pt)
	}
	slices.SortFunc(out, func(a, b pagetools.Tool) int { return strings.Compare(a.Name, b.Name) })
	return out, main, nil
}

// formFilled is the result of a form tool without toolautosubmit once the
// browser has filled the form: the page's own submit button sends it.
const formFilled = `{"status":"filled","note":"The browser filled the form with the arguments. It is sent when its submit button is pressed on the page."}`

// invokeNative runs the tool name of t's main frame through the browser's
// DevTools WebMCP domain (WebMCP.invokeTool) and waits for the browser's
// answer. A form tool without toolautosubmit is answered once the browser
// reports the call (the form is then filled); its submission is the page's.
func (b *Browser) invokeNative(ctx context.Context, t *tab, name string, args json.RawMessage) (pagetools.Result, error) {
	l, err := b.list(ctx, t)
	if err != nil {
		return pagetools.Result{}, err
	}
	listed, tools, err := b.nativeTools(ctx, t, l)
	if err != nil {
		return pagetools.Result{}, err
	}
	i := slices.IndexFunc(tools, func(tool *webmcp.Tool) bool { return tool.Name == name })
	if i < 0 {
		return pagetools.Result{Exception: fmt.Sprintf("no tool named %q is live on this page", name)}, nil
	}
	tool := tools[i]
	var registered bool
	for _, pt := range listed {
		registered = registered || pt.Name == name && pt.Registered
	}
	fillOnly := tool.BackendNodeID != 0 && (tool.Annotations == nil || !tool.Annotations.Autosubmit)
	b.mu.Lock()
	b.awaiting++
	b.mu.Unlock()
	defer func() {
		b.mu.Lock()
		b.awaiting--
		if b.awaiting == 0 {
			b.responses = nil
		}
		b.mu.Unlock()
	}()
	res, err := cdpconn.Send(ctx, b.conn, t.session, webmcp.InvokeTool, webmcp.InvokeToolParams{FrameID: cdp.FrameID(t.id), ToolName: name, Input: jsonv2.Value(args)})
	if err != nil {
		var pe *cdproto.Error
		if errors.As(err, &pe) {
			return pagetools.Result{Exception: pe.Message, Registered: registered}, nil
		}
		return pagetools.Result{}, fmt.Errorf("invoke %s: %w", name, err)
	}
	r, err := b.awaitResponse(ctx, res.InvocationID, fillOnly)
	if err != nil {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		defer cancel()
		cdpconn.Send(cctx, b.conn, t.session, webmcp.CancelInvocation, webmcp.CancelInvocationParams{InvocationID: res.InvocationID})
		return pagetools.Result{}, fmt.Errorf("invoke %s: %w", name, err)
	}
	out := pagetools.Result{Registered: registered}
	switch {
	case r == nil:
		out.Text = formFilled
	case r.status == webmcp.InvocationStatusCompleted:
		out.Text = outputText(r.output)
	case r.status == webmcp.InvocationStatusCanceled:
		out.Exception = "the browser canceled the call"
	default:
		out.Exception = r.err
		if out.Exception == "" {
			out.Exception = "the browser reported an error without a message"
		}
	}
	return out, nil
}

// outputText is a completed call's output as the agent gets it: a string
// as itself, anything else as JSON text, as the polyfill's results are.
func outputText(v jsonv2.Value) string {
	var s string
	if json.Unmarshal(v, &s) == nil {
		return s
	}
	return string(v)
}

// awaitResponse waits for the browser's answer to invocation id; with
// fillOnly, the browser's report that the call started is enough (nil).
func (b *Browser) awaitResponse(ctx context.Context, id string, fillOnly bool) (*response, error) {
	for {
		b.mu.Lock()
		if i := slices.IndexFunc(b.responses, func(r response) bool { return r.id == id }); i >= 0 {
			r := b.responses[i]
			b.responses = slices.Delete(b.responses, i, i+1)
			b.mu.Unlock()
			return &r, nil
		}
		if fillOnly && slices.ContainsFunc(b.calls, func(c browserCall) bool { return c.id == id }) {
			b.mu.Unlock()
			return nil, nil
		}
		if b.invocationCh == nil {
			b.invocationCh = make(chan struct{})
		}
		ch := b.invocationCh
		b.mu.Unlock()
		select {
		case <-ch:
		case <-b.conn.Done():
			return nil, cdpconn.ErrClosed
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}
