package local

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/chromedp/cdproto"
	"github.com/chromedp/cdproto/cdp"
	jsonv2 "github.com/chromedp/cdproto/cdp/jsonv2"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/cdproto/target"

	"github.com/pairbench/pairbench/intents"
	"github.com/pairbench/pairbench/runner"
	"github.com/pairbench/pairbench/runner/webmcp"
)

// Browser is one running Chromium. It implements runner.Browser.
//
// It auto-attaches to every tab (page target) with the tab paused at start,
// adds the registered scripts to it with Page.addScriptToEvaluateOnNewDocument
// and only then lets it run, so the scripts run before any page script of
// every document the tab loads, including tabs the agent opens. The
// connection stays open until Close.
type Browser struct {
	cfg  Config
	proc *process
	conn *conn
	// mark names the page-side registry on window; random per browser so a
	// page cannot know it in advance.
	mark string

	// life ends at Close; tab preparations run under it.
	life   context.Context
	cancel context.CancelFunc
	prep   sync.WaitGroup

	mu         sync.Mutex
	tabs       []*tab // attached tabs, in attach order
	start      *tab   // the tab the browser started with
	firstTab   chan struct{}
	scripts    []string // added to every tab attached from now on
	registered bool
	reported   map[string]bool // registration failures already logged

	closeOnce sync.Once
	closeErr  error
	stopWatch func() bool

	// running is closed once the trial's agent runs or the browser closes:
	// the provider then starts the next spare (see runner.Prestarter).
	running     chan struct{}
	runningOnce sync.Once
}

// tab is one attached page target.
type tab struct {
	session target.SessionID
	id      target.ID
	ready   chan struct{} // closed once its scripts are added and it runs
}

var _ runner.Browser = (*Browser)(nil)

// errStalled marks a navigation whose page was not parsed in time.
var errStalled = errors.New("start page stalled")

func open(ctx context.Context, cfg Config) (_ *Browser, err error) {
	proc, err := startProcess(ctx, cfg)
	if err != nil {
		return nil, err
	}
	b := &Browser{
		cfg:      cfg,
		proc:     proc,
		mark:     "__pairbench_" + randomHex(8),
		firstTab: make(chan struct{}),
		reported: make(map[string]bool),
		running:  make(chan struct{}),
	}
	b.life, b.cancel = context.WithCancel(context.Background())
	defer func() {
		if err != nil {
			b.Close(context.WithoutCancel(ctx))
		}
	}()
	if b.conn, err = dial(ctx, proc.wsURL, b.onEvent); err != nil {
		return nil, err
	}
	// Attach to every tab, existing and new, pausing new ones at start.
	if _, err := send(ctx, b.conn, "", target.SetAutoAttach, target.SetAutoAttachParams{
		AutoAttach:             true,
		WaitForDebuggerOnStart: true,
		Flatten:                ptr(true),
		Filter:                 target.Filter{{Type: "page"}},
	}); err != nil {
		return nil, fmt.Errorf("auto-attach: %w", err)
	}
	wait, cancel := context.WithTimeout(ctx, cfg.StartTimeout)
	defer cancel()
	select {
	case <-b.firstTab:
	case <-wait.Done():
		return nil, fmt.Errorf("chromium opened no tab: %w", wait.Err())
	}
	if err := waitTab(wait, b.start); err != nil {
		return nil, fmt.Errorf("chromium's first tab: %w", err)
	}
	b.mu.Lock() // Close may run as soon as ctx ends, and reads stopWatch
	b.stopWatch = context.AfterFunc(ctx, func() { b.Close(context.Background()) })
	b.mu.Unlock()
	return b, nil
}

// handOver rebinds a spare's life from the provider's context to ctx. It
// reports false, leaving the browser to be closed, when the browser is
// already closing or its Chromium has exited.
func (b *Browser) handOver(ctx context.Context) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.stopWatch != nil && !b.stopWatch() {
		return false // the provider's context ended: Close is under way
	}
	b.stopWatch = nil
	select {
	case <-b.proc.exited:
		return false
	default:
	}
	b.stopWatch = context.AfterFunc(ctx, func() { b.Close(context.Background()) })
	return true
}

// onEvent tracks tabs as they attach and detach. It runs on the connection's
// event goroutine, so anything that calls the browser runs on its own.
func (b *Browser) onEvent(msg *cdproto.Message) {
	switch msg.Method {
	case "Target.attachedToTarget":
		var ev target.EventAttachedToTarget
		if err := jsonv2.Unmarshal(msg.Params, &ev); err != nil || ev.TargetInfo == nil {
			b.cfg.Log.Warn("chromium: bad attachedToTarget event", "err", err)
			return
		}
		t := &tab{session: ev.SessionID, id: ev.TargetInfo.TargetID, ready: make(chan struct{})}
		b.mu.Lock()
		b.tabs = append(b.tabs, t)
		if b.start == nil {
			b.start = t
			close(b.firstTab)
		}
		scripts := b.scripts
		b.mu.Unlock()
		b.prep.Add(1)
		go b.prepare(t, scripts, ev.WaitingForDebugger)
	case "Page.frameNavigated":
		var ev page.EventFrameNavigated
		if err := jsonv2.Unmarshal(msg.Params, &ev); err != nil || ev.Frame == nil || ev.Frame.ParentID != "" {
			return
		}
		b.mu.Lock()
		var t *tab
		if i := slices.IndexFunc(b.tabs, func(t *tab) bool { return t.session == msg.SessionID }); i >= 0 {
			t = b.tabs[i]
		}
		scripts := b.scripts
		b.mu.Unlock()
		if t != nil && len(scripts) > 0 {
			b.prep.Add(1)
			go b.catchUp(t, scripts)
		}
	case "Target.detachedFromTarget":
		var ev target.EventDetachedFromTarget
		if err := jsonv2.Unmarshal(msg.Params, &ev); err != nil {
			return
		}
		b.mu.Lock()
		b.tabs = slices.DeleteFunc(b.tabs, func(t *tab) bool { return t.session == ev.SessionID })
		b.mu.Unlock()
	}
}

// prepareTimeout bounds the preparation of a new tab.
const prepareTimeout = 10 * time.Second

// prepare adds scripts to a newly attached tab and lets it run. The commands
// are posted together and answered in order: a tab paused at start may not
// answer Page.enable until it runs, and it runs only after the scripts are in.
func (b *Browser) prepare(t *tab, scripts []string, waiting bool) {
	defer b.prep.Done()
	defer close(t.ready)
	ctx, cancel := context.WithTimeout(b.life, prepareTimeout)
	defer cancel()
	type step struct {
		method string
		params any
	}
	// Scripts added to a tab run only while its Page domain is enabled.
	steps := []step{{page.Enable.Method, page.EnableParams{}}}
	for _, s := range scripts {
		steps = append(steps, step{page.AddScriptToEvaluateOnNewDocument.Method, page.AddScriptToEvaluateOnNewDocumentParams{Source: s}})
	}
	if waiting {
		steps = append(steps, step{runtime.RunIfWaitingForDebugger.Method, cdp.Empty{}})
	}
	var replies []*reply
	for _, s := range steps {
		r, err := b.conn.post(ctx, t.session, s.method, s.params)
		if err != nil {
			b.cfg.Log.Warn("chromium: could not prepare tab", "target", t.id, "err", err)
			break
		}
		replies = append(replies, r)
	}
	for _, r := range replies {
		if err := r.wait(ctx, nil); err != nil {
			b.cfg.Log.Warn("chromium: could not prepare tab", "target", t.id, "err", err)
		}
	}
}

// catchUp runs the scripts on a tab's new document when they did not run
// there as it started. That happens when a window outlives its document: a
// popup opened with window.open replaces its initial about:blank with a
// same-origin page in the same window, which Chromium does not treat as a new
// document for injected scripts. The tools then arrive after the page's first
// scripts, but they arrive.
func (b *Browser) catchUp(t *tab, scripts []string) {
	defer b.prep.Done()
	ctx, cancel := context.WithTimeout(b.life, prepareTimeout)
	defer cancel()
	if waitTab(ctx, t) != nil {
		return
	}
	check, err := call(`(function (mark) { return !!(window.top !== window || (window[mark] && window[mark].doc === document)); })`, b.mark)
	if err != nil {
		return
	}
	var present bool
	if err := b.eval(ctx, t, check, &present); err != nil || present {
		return
	}
	b.cfg.Log.Info("chromium: registering tools late on a reused window", "target", t.id)
	for _, s := range scripts {
		if _, err := send(ctx, b.conn, t.session, runtime.Evaluate, runtime.EvaluateParams{Expression: s}); err != nil {
			b.cfg.Log.Warn("chromium: late registration failed", "target", t.id, "err", err)
			return
		}
	}
}

// CDPURL returns the browser's DevTools websocket URL.
func (b *Browser) CDPURL() string { return b.proc.wsURL }

// RegisterTools adds the polyfill, the URL guard and one script per tool to
// every tab: to the tabs attached now, and to every tab attached later before
// it runs. It may be called once.
func (b *Browser) RegisterTools(ctx context.Context, tools []intents.Tool) error {
	scripts, err := bundle(b.mark, tools)
	if err != nil {
		return err
	}
	b.mu.Lock()
	if b.registered {
		b.mu.Unlock()
		return errors.New("tools are already registered in this browser")
	}
	b.registered = true
	b.scripts = scripts
	tabs := slices.Clone(b.tabs)
	b.mu.Unlock()
	for _, t := range tabs {
		if err := waitTab(ctx, t); err != nil {
			return err
		}
		// Post every script, then read the answers: they are applied in order.
		replies := make([]*reply, 0, len(scripts))
		for _, s := range scripts {
			r, err := b.conn.post(ctx, t.session, page.AddScriptToEvaluateOnNewDocument.Method,
				page.AddScriptToEvaluateOnNewDocumentParams{Source: s})
			if err != nil {
				return fmt.Errorf("inject into tab %s: %w", t.id, err)
			}
			replies = append(replies, r)
		}
		for _, r := range replies {
			if err := r.wait(ctx, nil); err != nil {
				return fmt.Errorf("inject into tab %s: %w", t.id, err)
			}
		}
	}
	return nil
}

// Load navigates the start tab to url: it waits up to ParseTimeout for the
// page to be parsed, navigates once more if it was not, and then waits up to
// LoadTimeout for the load to complete.
func (b *Browser) Load(ctx context.Context, url string) (runner.LoadInfo, error) {
	t := b.start
	if err := waitTab(ctx, t); err != nil {
		return runner.LoadInfo{}, err
	}
	began := time.Now()
	info := runner.LoadInfo{Navigations: 1}
	err := b.navigateParsed(ctx, t, url)
	if errors.Is(err, errStalled) {
		b.cfg.Log.Info("chromium: start page stalled; navigating once more", "url", url)
		info.Navigations = 2
		// Stop the stalled load first, or Chromium aborts the new navigation
		// to the same URL.
		if _, err := send(ctx, b.conn, t.session, page.StopLoading, cdp.Empty{}); err != nil {
			return runner.LoadInfo{}, fmt.Errorf("stop the stalled load: %w", err)
		}
		if err = b.navigateParsed(ctx, t, url); errors.Is(err, errStalled) {
			err = fmt.Errorf("%w (navigated twice)", err)
		}
	}
	if err != nil {
		return runner.LoadInfo{}, err
	}
	info.Parsed = time.Since(began)

	wait, cancel := context.WithTimeout(ctx, b.cfg.LoadTimeout)
	defer cancel()
	if err := b.waitReadyState(wait, t, "complete"); err != nil {
		if ctx.Err() == nil {
			return runner.LoadInfo{}, fmt.Errorf("start page parsed but not loaded within %s", b.cfg.LoadTimeout)
		}
		return runner.LoadInfo{}, err
	}
	info.Loaded = time.Since(began)
	info.LoadedAt = b.cfg.Now()
	if err := b.eval(ctx, t, "location.href", &info.URL); err != nil {
		return runner.LoadInfo{}, fmt.Errorf("read the loaded URL: %w", err)
	}
	return info, nil
}

// navigateParsed navigates t to url and waits until the new document is
// parsed, within ParseTimeout. It returns an error wrapping errStalled when
// time ran out.
func (b *Browser) navigateParsed(ctx context.Context, t *tab, url string) error {
	wait, cancel := context.WithTimeout(ctx, b.cfg.ParseTimeout)
	defer cancel()
	stalled := func(err error) error {
		if ctx.Err() == nil && wait.Err() != nil {
			return fmt.Errorf("%w: not parsed within %s", errStalled, b.cfg.ParseTimeout)
		}
		return err
	}
	// Page.navigate returns once the new document is committed.
	res, err := send(wait, b.conn, t.session, page.Navigate, page.NavigateParams{URL: url})
	if err != nil {
		return stalled(err)
	}
	if res.ErrorText != "" {
		return fmt.Errorf("navigation failed: %s", res.ErrorText)
	}
	return stalled(b.waitReadyState(wait, t, "interactive", "complete"))
}

// waitReadyState polls document.readyState until it is one of want.
func (b *Browser) waitReadyState(ctx context.Context, t *tab, want ...string) error {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		var state string
		// An evaluation can fail while a document is being replaced; poll on.
		if err := b.eval(ctx, t, "document.readyState", &state); err == nil && slices.Contains(want, state) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// LiveTools lists the WebMCP tools live on the current tab.
func (b *Browser) LiveTools(ctx context.Context) ([]webmcp.Tool, error) {
	t, err := b.current(ctx)
	if err != nil {
		return nil, err
	}
	expr, err := call(listJS, b.mark)
	if err != nil {
		return nil, err
	}
	var text string
	if err := b.eval(ctx, t, expr, &text); err != nil {
		return nil, fmt.Errorf("list page tools: %w", err)
	}
	var out struct {
		Tools    []webmcp.Tool     `json:"tools"`
		Failures map[string]string `json:"failures"`
	}
	if err := json.Unmarshal([]byte(text), &out); err != nil {
		return nil, fmt.Errorf("list page tools: %w", err)
	}
	b.reportFailures(out.Failures)
	slices.SortFunc(out.Tools, func(a, b webmcp.Tool) int { return cmp.Compare(a.Name, b.Name) })
	if out.Tools == nil {
		out.Tools = []webmcp.Tool{}
	}
	return out.Tools, nil
}

// reportFailures logs each tool that failed to register, once.
func (b *Browser) reportFailures(failures map[string]string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for name, why := range failures {
		if !b.reported[name] {
			b.reported[name] = true
			b.cfg.Log.Warn("chromium: tool not registered", "tool", name, "err", why)
		}
	}
}

// InvokeTool runs a live tool on the current tab.
func (b *Browser) InvokeTool(ctx context.Context, name string, args json.RawMessage) (webmcp.Result, error) {
	t, err := b.current(ctx)
	if err != nil {
		return webmcp.Result{}, err
	}
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	expr, err := call(invokeJS, b.mark, name, string(args))
	if err != nil {
		return webmcp.Result{}, err
	}
	var text string
	if err := b.eval(ctx, t, expr, &text); err != nil {
		return webmcp.Result{}, fmt.Errorf("invoke %s: %w", name, err)
	}
	var out struct {
		Text       string `json:"text"`
		Exception  string `json:"exception"`
		Registered bool   `json:"registered"`
	}
	if err := json.Unmarshal([]byte(text), &out); err != nil {
		return webmcp.Result{}, fmt.Errorf("invoke %s: %w", name, err)
	}
	return webmcp.Result{Text: out.Text, Exception: out.Exception, Registered: out.Registered}, nil
}

// current returns the tab opened last that is still open, once it runs.
func (b *Browser) current(ctx context.Context) (*tab, error) {
	b.mu.Lock()
	var t *tab
	if len(b.tabs) > 0 {
		t = b.tabs[len(b.tabs)-1]
	}
	b.mu.Unlock()
	if t == nil {
		return nil, errors.New("the browser has no open tab")
	}
	return t, waitTab(ctx, t)
}

// eval evaluates expr in t's page, awaiting a promise, and decodes the
// result into out. A thrown exception is an error.
func (b *Browser) eval(ctx context.Context, t *tab, expr string, out any) error {
	res, err := send(ctx, b.conn, t.session, runtime.Evaluate, runtime.EvaluateParams{
		Expression:    expr,
		ReturnByValue: ptr(true),
		AwaitPromise:  ptr(true),
	})
	if err != nil {
		return err
	}
	if d := res.ExceptionDetails; d != nil {
		msg := d.Text
		if d.Exception != nil && d.Exception.Description != "" {
			msg = d.Exception.Description
		}
		return fmt.Errorf("page threw: %s", msg)
	}
	if res.Result == nil || len(res.Result.Value) == 0 {
		return errors.New("page returned no value")
	}
	return jsonv2.Unmarshal(res.Result.Value, out)
}

// waitRunning waits until AgentRunning or Close, or until ctx ends.
func (b *Browser) waitRunning(ctx context.Context) {
	select {
	case <-b.running:
	case <-ctx.Done():
	}
}

// AgentRunning tells the provider that the trial's agent has started; it
// implements runner.Prestarter.
func (b *Browser) AgentRunning() { b.runningOnce.Do(func() { close(b.running) }) }

// Close kills every Chromium process, ends the connection and removes the
// profile directory. It is safe to call more than once.
func (b *Browser) Close(ctx context.Context) error {
	b.AgentRunning()
	b.closeOnce.Do(func() {
		b.mu.Lock()
		stopWatch := b.stopWatch
		b.mu.Unlock()
		if stopWatch != nil {
			stopWatch()
		}
		b.cancel()
		if b.conn != nil {
			b.conn.close() // no event, so no new preparation, after this
		}
		b.prep.Wait()
		b.closeErr = b.proc.stop()
	})
	return b.closeErr
}

func waitTab(ctx context.Context, t *tab) error {
	select {
	case <-t.ready:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func ptr[T any](v T) *T { return &v }

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b) // never fails (crypto/rand)
	return hex.EncodeToString(b)
}
