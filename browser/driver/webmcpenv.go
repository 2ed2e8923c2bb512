package driver

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/chromedp/cdproto"
	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	jsonv2 "github.com/chromedp/cdproto/cdp/jsonv2"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/cdproto/webmcp"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/browser/internal/cdpconn"
)

// maxBrowserCalls bounds the invocations a browser records.
const maxBrowserCalls = 1000

// browserCall is an invocation the browser's WebMCP reported.
type browserCall struct {
	id   string
	call pairbench.BrowserCall
}

// frameTools is what the browser's DevTools WebMCP domain reported for one
// tab: whether the domain answered, and the live tools by frame.
type frameTools struct {
	answered bool
	frames   map[string][]string
	count    int // tools in frames, at most maxBrowserTools
	// snap, while a snapshot is taken, collects every tool added.
	snap []*webmcp.Tool
}

// add records tool in its frame, up to maxBrowserTools.
func (ft *frameTools) add(tool *webmcp.Tool) {
	if tool == nil || ft.count >= maxBrowserTools {
		return
	}
	frame := string(tool.FrameID)
	if !slices.Contains(ft.frames[frame], tool.Name) {
		ft.frames[frame] = append(ft.frames[frame], tool.Name)
		ft.count++
	}
}

// maxBrowserTools bounds the tools kept per tab: a hostile page may
// register without end.
const maxBrowserTools = 256

// enableWebMCP turns the DevTools WebMCP domain on for tab t, so that its
// toolsAdded and toolsRemoved events keep the tab's tools by frame. A
// browser without the domain (or without WebMCP) answers with an error or
// reports nothing: that is recorded, not a failure.
func (b *Browser) enableWebMCP(ctx context.Context, t *tab) {
	if _, err := cdpconn.Send(ctx, b.conn, t.session, webmcp.Enable, struct{}{}); err != nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.webmcpTools(t.session).answered = true
}

// webmcpTools returns session's entry, adding it; b.mu must be held.
func (b *Browser) webmcpTools(session target.SessionID) *frameTools {
	if b.native == nil {
		b.native = map[target.SessionID]*frameTools{}
	}
	ft := b.native[session]
	if ft == nil {
		ft = &frameTools{frames: map[string][]string{}}
		b.native[session] = ft
	}
	return ft
}

// onWebMCPEvent keeps the tools the browser's WebMCP domain reports.
func (b *Browser) onWebMCPEvent(msg *cdproto.Message) {
	b.mu.Lock()
	sink := b.webmcpSink
	b.mu.Unlock()
	if sink != nil {
		sink(msg)
	}
	switch msg.Method {
	case cdproto.MethodType(webmcp.ToolInvoked.Method):
		var ev webmcp.EventToolInvoked
		if jsonv2.Unmarshal(msg.Params, &ev) != nil {
			return
		}
		b.mu.Lock()
		if len(b.calls) < maxBrowserCalls {
			b.calls = append(b.calls, browserCall{id: ev.InvocationID, call: pairbench.BrowserCall{Tool: ev.ToolName}})
		} else {
			b.callsCut = true
		}
		b.noteInvocation(nil)
		b.mu.Unlock()
	case cdproto.MethodType(webmcp.ToolResponded.Method):
		var ev webmcp.EventToolResponded
		if jsonv2.Unmarshal(msg.Params, &ev) != nil {
			return
		}
		b.mu.Lock()
		if i := slices.IndexFunc(b.calls, func(c browserCall) bool { return c.id == ev.InvocationID }); i >= 0 {
			b.calls[i].call.Status = string(ev.Status)
		}
		b.noteInvocation(responseOf(&ev))
		b.mu.Unlock()
	case cdproto.MethodType(webmcp.ToolsAdded.Method):
		var ev webmcp.EventToolsAdded
		if jsonv2.Unmarshal(msg.Params, &ev) != nil {
			return
		}
		b.mu.Lock()
		ft := b.webmcpTools(msg.SessionID)
		for _, tool := range ev.Tools {
			if ft.snap != nil && tool != nil && len(ft.snap) < maxBrowserTools {
				ft.snap = append(ft.snap, tool)
			}
			ft.add(tool)
		}
		b.mu.Unlock()
	case cdproto.MethodType(webmcp.ToolsRemoved.Method):
		var ev webmcp.EventToolsRemoved
		if jsonv2.Unmarshal(msg.Params, &ev) != nil {
			return
		}
		b.mu.Lock()
		ft := b.webmcpTools(msg.SessionID)
		for _, tool := range ev.Tools {
			if tool == nil {
				continue
			}
			ft.snap = slices.DeleteFunc(ft.snap, func(t *webmcp.Tool) bool { return t.Name == tool.Name && t.FrameID == tool.FrameID })
			frame := string(tool.FrameID)
			before := len(ft.frames[frame])
			ft.frames[frame] = slices.DeleteFunc(ft.frames[frame], func(n string) bool { return n == tool.Name })
			ft.count -= before - len(ft.frames[frame])
			if len(ft.frames[frame]) == 0 {
				delete(ft.frames, frame)
			}
		}
		b.mu.Unlock()
	}
}

// WebMCPEnv reports the browser's WebMCP environment on the current tab:
// its version, the switches the run added, the run's WebMCP mode, whether
// the page has the browser's own document.modelContext, the origin trials
// the browser reports for it, and the tools its DevTools WebMCP domain
// reports per frame, asked now.
func (b *Browser) WebMCPEnv(ctx context.Context) (*pairbench.WebMCPEnv, error) {
	t, err := b.current(ctx)
	if err != nil {
		return nil, err
	}
	v, err := cdpconn.Send(ctx, b.conn, "", browser.GetVersion, struct{}{})
	if err != nil {
		return nil, fmt.Errorf("browser version: %w", err)
	}
	env := &pairbench.WebMCPEnv{Browser: v.Product, Mode: cmp.Or(b.cfg.WebMCP, pairbench.WebMCPPolyfill)}
	env.Switches = slices.Clone(b.cfg.Switches)
	if env.PageNative, err = b.NativeWebMCP(ctx); err != nil {
		return nil, err
	}
	if trials, err := cdpconn.Send(ctx, b.conn, t.session, page.GetOriginTrials, page.GetOriginTrialsParams{FrameID: cdp.FrameID(t.id)}); err == nil {
		for _, tr := range trials.OriginTrials {
			if tr != nil {
				env.OriginTrials = append(env.OriginTrials, pairbench.OriginTrial{Name: tr.TrialName, Status: string(tr.Status)})
			}
		}
	}
	// A browser without the domain cannot be asked: its record stays
	// unanswered.
	if _, err := b.snapshot(ctx, t); err != nil && (ctx.Err() != nil || errors.Is(err, cdpconn.ErrClosed)) {
		return nil, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if ft := b.native[t.session]; ft != nil && ft.answered {
		env.DevTools = true
		for frame, names := range maps.All(ft.frames) {
			if env.FrameTools == nil {
				env.FrameTools = map[string][]string{}
			}
			env.FrameTools[frame] = slices.Sorted(slices.Values(names))
		}
	}
	return env, nil
}

// BrowserCalls returns the tool invocations the browser's own WebMCP
// reported on any of its tabs, in order (at most maxBrowserCalls), and
// whether its DevTools WebMCP domain answered on a tab and every call was
// kept (past maxBrowserCalls the browser's record is no longer whole, so
// it cannot tell).
func (b *Browser) BrowserCalls() ([]pairbench.BrowserCall, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	answered := false
	for _, ft := range b.native {
		answered = answered || ft.answered
	}
	out := make([]pairbench.BrowserCall, 0, len(b.calls))
	for _, c := range b.calls {
		out = append(out, c.call)
	}
	return out, answered && !b.callsCut
}
