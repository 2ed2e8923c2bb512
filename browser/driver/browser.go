package driver

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	neturl "net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/cdproto"
	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	jsonv2 "github.com/chromedp/cdproto/cdp/jsonv2"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/browser/internal/cdpconn"
	"github.com/pairbench/pairbench/intents"
	"github.com/pairbench/pairbench/runner"
	"github.com/pairbench/pairbench/runner/webmcp"
)

// Browser is pairbench's driver of one running Chromium, whoever started
// it. It implements runner.Browser.
//
// It auto-attaches to every tab (page target) with the tab paused at start,
// adds the registered scripts to it with Page.addScriptToEvaluateOnNewDocument
// and only then lets it run, so the scripts run before any page script of
// every document the tab loads, including tabs the agent opens. The
// connection stays open until Close.
type Browser struct {
	cfg  Config
	proc Process
	conn *cdpconn.Conn
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
	// tools are the tool files' scripts; compiled holds, by tool name, the
	// browser's message for a script it could not compile ("" when it
	// compiled).
	tools    []toolScript
	compiled map[string]string
	// failures are the registration failures seen so far, each tool,
	// page and message once, in the order seen.
	failures []pairbench.RegistrationFailure
	seen     map[pairbench.RegistrationFailure]bool
	// native holds, by tab session, the tools the browser's own WebMCP
	// reports (see enableWebMCP).
	native map[target.SessionID]*frameTools
	// calls are the tool invocations the browser's own WebMCP reported.
	calls []browserCall
	// callsCut is set once a call past maxBrowserCalls was dropped.
	callsCut bool
	// responses are the browser's answers to invocations not yet claimed by
	// InvokeTool, kept while awaiting (the native calls under way) is not
	// 0; invocationCh, when set, is closed at the next invocation event
	// (see noteInvocation).
	responses    []response
	awaiting     int
	invocationCh chan struct{}
	// snapMu makes one snapshot of a browser's tools at a time.
	snapMu sync.Mutex
	// webmcpSink, when set, also gets every event onEvent does not handle
	// itself (tests watch the WebMCP domain's invocation events with it).
	webmcpSink func(*cdproto.Message)

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

// Process is what the driver knows of the browser behind its connection:
// whoever started it answers for it.
type Process interface {
	// DevTools is the agent's way to the browser (runner.Browser.DevTools).
	DevTools() runner.DevTools
	// Refusals returns the requests the browser's egress refused since it
	// started, the first ones kept, and how many there were in all
	// (runner.RefusalReporter); none when its egress is not this host's.
	Refusals() ([]runner.Refusal, int)
	// StartErr is the error of a start that failed on the connection with
	// err: how the browser exited, when it did, else err.
	StartErr(err error) error
	// Stop ends the browser (or only its connection, for a browser that
	// runs elsewhere), once the driver's connection is closed. Browser.Close
	// calls it once.
	Stop() error
}

// New drives the browser proc stands for over tr, its CDP connection,
// which it owns from now on: it attaches to every tab and waits for the
// first, within cfg.StartTimeout. On error everything is closed, proc
// included. The browser lives until Close or until ctx ends (see Rebind).
func New(ctx context.Context, cfg Config, proc Process, tr chromedp.Transport) (_ *Browser, err error) {
	cfg.setDefaults()
	b := &Browser{
		cfg:      cfg,
		proc:     proc,
		mark:     "__pairbench_" + randomHex(8),
		firstTab: make(chan struct{}),
		compiled: make(map[string]string),
		seen:     make(map[pairbench.RegistrationFailure]bool),
		running:  make(chan struct{}),
	}
	b.life, b.cancel = context.WithCancel(context.Background())
	defer func() {
		if err != nil {
			b.Close(context.WithoutCancel(ctx))
		}
	}()
	b.conn = cdpconn.New(tr, b.onEvent)
	// Downloads are refused by policy already; ask for the same here.
	if _, err := cdpconn.Send(ctx, b.conn, "", browser.SetDownloadBehavior, browser.SetDownloadBehaviorParams{
		Behavior: browser.SetDownloadBehaviorBehaviorDeny,
	}); err != nil {
		return nil, proc.StartErr(fmt.Errorf("deny downloads: %w", err))
	}
	// Attach to every tab, existing and new, pausing new ones at start.
	if _, err := cdpconn.Send(ctx, b.conn, "", target.SetAutoAttach, target.SetAutoAttachParams{
		AutoAttach:             true,
		WaitForDebuggerOnStart: true,
		Flatten:                ptr(true),
		Filter:                 target.Filter{{Type: "page"}},
	}); err != nil {
		return nil, proc.StartErr(fmt.Errorf("auto-attach: %w", err))
	}
	wait, cancel := context.WithTimeout(ctx, cfg.StartTimeout)
	defer cancel()
	select {
	case <-b.firstTab:
	case <-wait.Done():
		return nil, proc.StartErr(fmt.Errorf("chromium opened no tab: %w", wait.Err()))
	}
	if err := waitTab(wait, b.start); err != nil {
		return nil, fmt.Errorf("chromium's first tab: %w", err)
	}
	b.mu.Lock() // Close may run as soon as ctx ends, and reads stopWatch
	b.stopWatch = context.AfterFunc(ctx, func() { b.Close(context.Background()) })
	b.mu.Unlock()
	return b, nil
}

// Rebind ties the browser's life to ctx instead of the context New was
// given (a spare is started under its provider's and handed to a trial).
// It reports false, leaving the browser to be closed, when the browser is
// already closing.
func (b *Browser) Rebind(ctx context.Context) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.stopWatch != nil && !b.stopWatch() {
		return false // the first context ended: Close is under way
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
		delete(b.native, ev.SessionID)
		b.mu.Unlock()
	default:
		b.onWebMCPEvent(msg)
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
	var replies []*cdpconn.Reply
	for _, s := range steps {
		r, err := b.conn.Post(ctx, t.session, s.method, s.params)
		if err != nil {
			b.cfg.Log.Warn("chromium: could not prepare tab", "target", t.id, "err", err)
			break
		}
		replies = append(replies, r)
	}
	for _, r := range replies {
		if err := r.Wait(ctx, nil); err != nil {
			b.cfg.Log.Warn("chromium: could not prepare tab", "target", t.id, "err", err)
		}
	}
	b.enableWebMCP(ctx, t)
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
		if _, err := cdpconn.Send(ctx, b.conn, t.session, runtime.Evaluate, runtime.EvaluateParams{Expression: s}); err != nil {
			b.cfg.Log.Warn("chromium: late registration failed", "target", t.id, "err", err)
			return
		}
	}
}

// DevTools returns the agent's way to the browser, as its Process has it.
func (b *Browser) DevTools() runner.DevTools { return b.proc.DevTools() }

// Refusals returns the requests the browser's egress refused since it
// started; it implements runner.RefusalReporter.
func (b *Browser) Refusals() ([]runner.Refusal, int) { return b.proc.Refusals() }

// RegisterTools adds the polyfill (none in native mode), the URL guard and
// one script per tool to every tab: to the tabs attached now, and to every
// tab attached later before it runs. It may be called once.
func (b *Browser) RegisterTools(ctx context.Context, tools []intents.Tool) error {
	registry, toolScripts, err := bundle(b.mark, tools, !b.cfg.native())
	if err != nil {
		return err
	}
	scripts := []string{registry}
	for _, t := range toolScripts {
		scripts = append(scripts, t.script)
	}
	b.mu.Lock()
	if b.registered {
		b.mu.Unlock()
		return errors.New("tools are already registered in this browser")
	}
	b.registered = true
	b.scripts, b.tools = scripts, toolScripts
	tabs := slices.Clone(b.tabs)
	b.mu.Unlock()
	for _, t := range tabs {
		if err := waitTab(ctx, t); err != nil {
			return err
		}
		// Post every script, then read the answers: they are applied in order.
		replies := make([]*cdpconn.Reply, 0, len(scripts))
		for _, s := range scripts {
			r, err := b.conn.Post(ctx, t.session, page.AddScriptToEvaluateOnNewDocument.Method,
				page.AddScriptToEvaluateOnNewDocumentParams{Source: s})
			if err != nil {
				return fmt.Errorf("inject into tab %s: %w", t.id, err)
			}
			replies = append(replies, r)
		}
		for _, r := range replies {
			if err := r.Wait(ctx, nil); err != nil {
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
	_, refusedBefore := b.proc.Refusals()
	err := b.navigateParsed(ctx, t, url)
	if errors.Is(err, errStalled) {
		b.cfg.Log.Info("chromium: start page stalled; navigating once more", "url", url)
		info.Navigations = 2
		// Stop the stalled load first, or Chromium aborts the new navigation
		// to the same URL.
		if _, err := cdpconn.Send(ctx, b.conn, t.session, page.StopLoading, cdp.Empty{}); err != nil {
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
	// A start page the egress refused shows its refusal, not the site.
	if host := hostOf(url); host != "" {
		kept, _ := b.proc.Refusals()
		for _, r := range kept[min(refusedBefore, len(kept)):] {
			if r.Host == host {
				return runner.LoadInfo{}, fmt.Errorf("start page refused by the browser's egress: %s", r.Reason)
			}
		}
	}
	if err := b.eval(ctx, t, "location.href", &info.URL); err != nil {
		return runner.LoadInfo{}, fmt.Errorf("read the loaded URL: %w", err)
	}
	if err := b.checkNotEgressFailure(ctx, t, url); err != nil {
		return runner.LoadInfo{}, err
	}
	return info, nil
}

// Navigate navigates the start tab to url, within 15 seconds, and returns
// the navigation's error text ("" when the page committed). Unlike Load it
// waits for nothing more and explains nothing (the local browser's
// self-check tries URLs that must be refused).
func (b *Browser) Navigate(ctx context.Context, url string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if err := waitTab(ctx, b.start); err != nil {
		return "", err
	}
	res, err := cdpconn.Send(ctx, b.conn, b.start.session, page.Navigate, page.NavigateParams{URL: url})
	if err != nil {
		return "", err
	}
	return res.ErrorText, nil
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
	res, err := cdpconn.Send(wait, b.conn, t.session, page.Navigate, page.NavigateParams{URL: url})
	if err != nil {
		return stalled(err)
	}
	if res.ErrorText != "" {
		return b.cfg.startPageFailed(ctx, url, res.ErrorText)
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

// LiveTools lists the WebMCP tools live on the current tab: the page's
// document.modelContext's, or in native mode those of the tab's main frame
// as the browser's DevTools WebMCP domain reports them. The tools that did
// not register there are recorded for RegistrationFailures.
func (b *Browser) LiveTools(ctx context.Context) ([]webmcp.Tool, error) {
	t, err := b.current(ctx)
	if err != nil {
		return nil, err
	}
	l, err := b.list(ctx, t)
	if err != nil {
		return nil, err
	}
	if b.cfg.native() {
		tools, _, err := b.nativeTools(ctx, t, l)
		return tools, err
	}
	return l.Tools, nil
}

// RegistrationFailures returns the registered tools that did not become
// live: on the current tab's page, checked now, and on the pages listed
// before.
func (b *Browser) RegistrationFailures(ctx context.Context) ([]pairbench.RegistrationFailure, error) {
	t, err := b.current(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := b.list(ctx, t); err != nil {
		return nil, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.failures), nil
}

// listing is what list.js reports of a page.
type listing struct {
	URL   string        `json:"url"`
	Tools []webmcp.Tool `json:"tools"`
	// Registered names the tools pairbench's registry registered here.
	Registered []string `json:"registered"`
	Failures   []struct {
		Tool  string `json:"tool"`
		File  string `json:"file"`
		Line  int    `json:"line"`
		Error string `json:"error"`
	} `json:"failures"`
	// Missing names tool files whose patterns match the page but whose
	// script never reached the registry.
	Missing []string `json:"missing"`
}

// list reads t's live tools and registration failures, and records the
// failures.
func (b *Browser) list(ctx context.Context, t *tab) (*listing, error) {
	expr := listJS + "(" + jsonString(b.mark) + ", " + strings.TrimSpace(matchJS) + ")"
	var text string
	if err := b.eval(ctx, t, expr, &text); err != nil {
		return nil, fmt.Errorf("list page tools: %w", err)
	}
	var l listing
	if err := json.Unmarshal([]byte(text), &l); err != nil {
		return nil, fmt.Errorf("list page tools: %w", err)
	}
	slices.SortFunc(l.Tools, func(a, b webmcp.Tool) int { return cmp.Compare(a.Name, b.Name) })
	if l.Tools == nil {
		l.Tools = []webmcp.Tool{}
	}
	var found []pairbench.RegistrationFailure
	for _, f := range l.Failures {
		found = append(found, pairbench.RegistrationFailure{Tool: f.Tool, File: f.File, Line: f.Line, URL: l.URL, Error: f.Error})
	}
	for _, name := range l.Missing {
		ts := b.tool(name)
		found = append(found, pairbench.RegistrationFailure{Tool: name, File: ts.file, URL: l.URL,
			Error: b.compileError(ctx, t, ts)})
	}
	b.record(found)
	return &l, nil
}

// record keeps each new failure and logs it once.
func (b *Browser) record(found []pairbench.RegistrationFailure) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, f := range found {
		if b.seen[f] {
			continue
		}
		b.seen[f] = true
		b.failures = append(b.failures, f)
		b.cfg.Log.Warn("chromium: tool not registered", "tool", f.Tool, "file", f.File, "line", f.Line, "url", f.URL, "err", f.Error)
	}
}

// tool returns the script of the tool file named name.
func (b *Browser) tool(name string) toolScript {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, t := range b.tools {
		if t.name == name {
			return t
		}
	}
	return toolScript{name: name}
}

// compileError says why a tool file's script never reached the registry on
// t's page: the browser's own message for a script it cannot compile. It
// compiles the script in an isolated world of the page (invisible to the
// page's scripts, and not subject to its Content Security Policy), without
// running it; the result is kept per tool.
func (b *Browser) compileError(ctx context.Context, t *tab, ts toolScript) string {
	b.mu.Lock()
	msg, done := b.compiled[ts.name]
	b.mu.Unlock()
	if done {
		return orRan(msg)
	}
	msg, err := b.compile(ctx, t, ts.script)
	if err != nil {
		return "its script did not run on this page, and the browser could not be asked why: " + err.Error()
	}
	b.mu.Lock()
	b.compiled[ts.name] = msg
	b.mu.Unlock()
	return orRan(msg)
}

func orRan(msg string) string {
	if msg == "" {
		return "its script compiles but did not run on this page"
	}
	return "the browser cannot compile the file: " + msg
}

// compile compiles script as a function body in an isolated world of t's
// page and returns the browser's message, "" when it compiles.
func (b *Browser) compile(ctx context.Context, t *tab, script string) (string, error) {
	tree, err := cdpconn.Send(ctx, b.conn, t.session, page.GetFrameTree, cdp.Empty{})
	if err != nil {
		return "", err
	}
	world, err := cdpconn.Send(ctx, b.conn, t.session, page.CreateIsolatedWorld,
		page.CreateIsolatedWorldParams{FrameID: tree.FrameTree.Frame.ID, WorldName: "pairbench-compile"})
	if err != nil {
		return "", err
	}
	expr, err := call(`(function (src) { try { new Function(src); return ""; } catch (e) { return String(e); } })`, script)
	if err != nil {
		return "", err
	}
	res, err := cdpconn.Send(ctx, b.conn, t.session, runtime.Evaluate, runtime.EvaluateParams{
		Expression: expr, ContextID: world.ExecutionContextID, ReturnByValue: ptr(true)})
	if err != nil {
		return "", err
	}
	if res.ExceptionDetails != nil || res.Result == nil {
		return "", errors.New("the compile check itself failed")
	}
	var msg string
	if err := jsonv2.Unmarshal(res.Result.Value, &msg); err != nil {
		return "", err
	}
	return msg, nil
}

// InvokeTool runs a live tool on the current tab: through the page's
// document.modelContext, or in native mode through the browser's DevTools
// WebMCP domain.
func (b *Browser) InvokeTool(ctx context.Context, name string, args json.RawMessage) (webmcp.Result, error) {
	t, err := b.current(ctx)
	if err != nil {
		return webmcp.Result{}, err
	}
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	if b.cfg.native() {
		return b.invokeNative(ctx, t, name, args)
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
	res, err := cdpconn.Send(ctx, b.conn, t.session, runtime.Evaluate, runtime.EvaluateParams{
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

// Running is closed once AgentRunning or Close was called.
func (b *Browser) Running() <-chan struct{} { return b.running }

// AgentRunning tells the provider that the trial's agent has started; it
// implements runner.Prestarter.
func (b *Browser) AgentRunning() { b.runningOnce.Do(func() { close(b.running) }) }

// Close ends the connection and then stops the browser's Process (a local
// Chromium is killed and its profile directory removed). It is safe to
// call more than once.
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
			b.conn.Close() // no event, so no new preparation, after this
		}
		b.prep.Wait()
		b.closeErr = b.proc.Stop()
	})
	return b.closeErr
}

// hostOf returns u's host as the egress names it (lower case, without
// brackets), or "".
func hostOf(u string) string {
	p, err := neturl.Parse(u)
	if err != nil {
		return ""
	}
	return strings.ToLower(p.Hostname())
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
