package runner

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/intents"
	"github.com/pairbench/pairbench/runner/webmcp"
)

// The real provider is tested against Chromium in browser/local; these
// fakes pin down SetUpBrowser's own decisions: retries, checks and cleanup.

// scriptedBrowser is a browser whose load result, live tools and
// signed-in check are scripted. Its page has the polyfill's WebMCP, no
// DevTools WebMCP domain, and an empty final page.
type scriptedBrowser struct {
	loadErr   error
	blockLoad bool // Load waits for its context to end
	live      []webmcp.Tool
	failed    []pairbench.RegistrationFailure
	// check is what a tool run unregistered (the signed-in check) returns.
	check webmcp.Result

	mu         sync.Mutex
	registered []intents.Tool
	closed     bool
}

var _ Browser = (*scriptedBrowser)(nil)

func (b *scriptedBrowser) DevTools() DevTools {
	return DevTools{URL: "ws://127.0.0.1:9/devtools/browser/fake"}
}

func (b *scriptedBrowser) RegisterTools(_ context.Context, tools []intents.Tool) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.registered = tools
	return nil
}

func (b *scriptedBrowser) Load(ctx context.Context, url string) (LoadInfo, error) {
	if b.blockLoad {
		<-ctx.Done()
		return LoadInfo{}, ctx.Err()
	}
	if b.loadErr != nil {
		return LoadInfo{}, b.loadErr
	}
	return LoadInfo{URL: url, Navigations: 1}, nil
}

func (b *scriptedBrowser) LiveTools(context.Context) ([]webmcp.Tool, error) { return b.live, nil }

func (b *scriptedBrowser) RegistrationFailures(context.Context) ([]pairbench.RegistrationFailure, error) {
	return b.failed, nil
}

func (b *scriptedBrowser) InvokeTool(context.Context, string, json.RawMessage) (webmcp.Result, error) {
	return webmcp.Result{}, errors.New("not used")
}

func (b *scriptedBrowser) RunTool(context.Context, intents.Tool, json.RawMessage) (webmcp.Result, error) {
	return b.check, nil
}

func (b *scriptedBrowser) NativeWebMCP(context.Context) (bool, error) { return false, nil }

func (b *scriptedBrowser) WebMCPEnv(context.Context) (*pairbench.WebMCPEnv, error) {
	return &pairbench.WebMCPEnv{Browser: "Scripted/1", Mode: pairbench.WebMCPPolyfill}, nil
}

func (b *scriptedBrowser) BrowserCalls() ([]pairbench.BrowserCall, bool) { return nil, false }

func (b *scriptedBrowser) PageState(context.Context, []string) (pairbench.PageState, error) {
	return pairbench.PageState{}, nil
}

// pngSignature is what every PNG starts with: the scripted screenshot.
const pngSignature = "\x89PNG\r\n\x1a\n"

func (b *scriptedBrowser) Screenshot(context.Context) ([]byte, error) {
	return []byte(pngSignature), nil
}

func (b *scriptedBrowser) Close(context.Context) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	return nil
}

func (b *scriptedBrowser) isClosed() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.closed
}

// noProfiles is the HasProfile of fake providers: they have no stored
// profiles, as the local provider has none.
type noProfiles struct{}

func (noProfiles) HasProfile(context.Context, string) (bool, error) { return false, nil }

// queuedBrowsers hands out its browsers in order; an entry with openErr set
// fails to open instead.
type queuedBrowsers struct {
	noProfiles
	mu      sync.Mutex
	queue   []*scriptedBrowser
	openErr map[int]error
	opened  int
}

func (q *queuedBrowsers) Open(context.Context, BrowserSpec) (Browser, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	i := q.opened
	q.opened++
	if err := q.openErr[i]; err != nil {
		return nil, err
	}
	return q.queue[i], nil
}

var setupLog = slog.New(slog.NewTextHandler(io.Discard, nil))

func liveEntryTool(registered bool) webmcp.Tool {
	return webmcp.Tool{Name: "find_books", Registered: registered}
}

func TestSetUpBrowserRetriesWithFreshBrowsers(t *testing.T) {
	stalled := &scriptedBrowser{loadErr: errors.New("start page stalled")}
	noEntry := &scriptedBrowser{live: []webmcp.Tool{{Name: "other", Registered: true}}}
	ready := &scriptedBrowser{live: []webmcp.Tool{liveEntryTool(true), {Name: "shop_hours"}}}
	browsers := &queuedBrowsers{queue: []*scriptedBrowser{nil, stalled, noEntry, ready}, openErr: map[int]error{0: errors.New("no chromium")}}
	tools := []intents.Tool{{Name: "find_books"}}

	setup, err := SetUpBrowser(t.Context(), setupLog, browsers, SetupSpec{
		Arm: pairbench.Treatment, StartURL: "http://books.example/", Tools: tools, EntryTool: "find_books", Attempts: 4,
	})
	require.NoError(t, err)
	assert.Same(t, ready, setup.Browser)
	assert.Equal(t, []string{
		"open: no chromium",
		"load http://books.example/: start page stalled",
		"entry tool find_books is not live on http://books.example/ (registered tools live: other)",
	}, setup.Failures)
	assert.Equal(t, []string{"shop_hours"}, setup.Native)
	assert.True(t, stalled.isClosed(), "a failed browser is closed")
	assert.True(t, noEntry.isClosed(), "a failed browser is closed")
	assert.False(t, ready.isClosed(), "the caller owns the ready browser")
	assert.Equal(t, tools, ready.registered)
}

func TestSetUpBrowserAbortsAfterItsAttempts(t *testing.T) {
	var queue []*scriptedBrowser
	for range DefaultSetupAttempts + 1 {
		queue = append(queue, &scriptedBrowser{loadErr: errors.New("net::ERR_CONNECTION_REFUSED")})
	}
	browsers := &queuedBrowsers{queue: queue}
	_, err := SetUpBrowser(t.Context(), setupLog, browsers, SetupSpec{Arm: pairbench.Control, StartURL: "http://books.example/"})
	var setupErr *SetupError
	require.ErrorAs(t, err, &setupErr)
	assert.Len(t, setupErr.Failures, DefaultSetupAttempts)
	assert.Equal(t, "load http://books.example/: net::ERR_CONNECTION_REFUSED", setupErr.Reason())
	assert.Equal(t, DefaultSetupAttempts, browsers.opened, "no browser beyond the attempts")
	for _, b := range queue[:DefaultSetupAttempts] {
		assert.True(t, b.isClosed())
	}
}

func TestSetUpBrowserChecksEachArm(t *testing.T) {
	// A native tool that shares the entry tool's name is not the entry tool.
	nativeOnly := &scriptedBrowser{live: []webmcp.Tool{liveEntryTool(false)}}
	_, err := SetUpBrowser(t.Context(), setupLog, &queuedBrowsers{queue: []*scriptedBrowser{nativeOnly}},
		SetupSpec{Arm: pairbench.Treatment, StartURL: "http://books.example/", Tools: []intents.Tool{{Name: "find_books"}}, EntryTool: "find_books", Attempts: 1})
	var setupErr *SetupError
	require.ErrorAs(t, err, &setupErr)
	assert.Contains(t, setupErr.Reason(), "entry tool find_books is not live")

	leaky := &scriptedBrowser{live: []webmcp.Tool{liveEntryTool(true), {Name: "shop_hours"}}}
	_, err = SetUpBrowser(t.Context(), setupLog, &queuedBrowsers{queue: []*scriptedBrowser{leaky}},
		SetupSpec{Arm: pairbench.Control, StartURL: "http://books.example/", Attempts: 1})
	require.ErrorAs(t, err, &setupErr)
	assert.Equal(t, "control page http://books.example/ already has custom tools: find_books", setupErr.Reason())

	clean := &scriptedBrowser{live: []webmcp.Tool{{Name: "shop_hours"}}}
	setup, err := SetUpBrowser(t.Context(), setupLog, &queuedBrowsers{queue: []*scriptedBrowser{clean}},
		SetupSpec{Arm: pairbench.Control, StartURL: "http://books.example/"})
	require.NoError(t, err)
	assert.Equal(t, []string{"shop_hours"}, setup.Native)
	assert.Nil(t, clean.registered, "control without tools registers nothing")
	assert.Zero(t, setup.Timing.Register)

	// A treatment without tools (a context arm) is checked as control is.
	_, err = SetUpBrowser(t.Context(), setupLog, &queuedBrowsers{queue: []*scriptedBrowser{{live: []webmcp.Tool{liveEntryTool(true)}}}},
		SetupSpec{Arm: pairbench.Treatment, StartURL: "http://books.example/", Attempts: 1})
	require.ErrorAs(t, err, &setupErr)
	assert.Equal(t, "treatment page http://books.example/ already has custom tools: find_books", setupErr.Reason())
}

// TestSetUpBrowserRegistersAControlArmsTools: a tools@REV control
// registers its tools and is checked as treatment is.
func TestSetUpBrowserRegistersAControlArmsTools(t *testing.T) {
	tools := []intents.Tool{{Name: "find_books"}}
	ready := &scriptedBrowser{live: []webmcp.Tool{liveEntryTool(true)}}
	setup, err := SetUpBrowser(t.Context(), setupLog, &queuedBrowsers{queue: []*scriptedBrowser{ready}},
		SetupSpec{Arm: pairbench.Control, StartURL: "http://books.example/", Tools: tools, EntryTool: "find_books"})
	require.NoError(t, err)
	assert.Equal(t, tools, ready.registered)
	require.NoError(t, setup.Browser.Close(t.Context()))

	missing := &scriptedBrowser{live: []webmcp.Tool{{Name: "shop_hours"}}}
	_, err = SetUpBrowser(t.Context(), setupLog, &queuedBrowsers{queue: []*scriptedBrowser{missing}},
		SetupSpec{Arm: pairbench.Control, StartURL: "http://books.example/", Tools: tools, EntryTool: "find_books", Attempts: 1})
	var setupErr *SetupError
	require.ErrorAs(t, err, &setupErr)
	assert.Contains(t, setupErr.Reason(), "entry tool find_books is not live")
}

// TestSetUpBrowserNamesToolsThatDidNotRegister: a tool file that fails in
// the page is the trial's reason, with its file and the browser's message,
// and no fresh browser is tried (it would fail alike).
func TestSetUpBrowserNamesToolsThatDidNotRegister(t *testing.T) {
	tools := []intents.Tool{{Name: "find_books"}, {Name: "list_genre"}}
	syntax := pairbench.RegistrationFailure{Tool: "list_genre", File: "domains/books.example/tools/list_genre.js",
		URL: "http://books.example/", Error: "the browser cannot compile the file: SyntaxError: Unexpected token 'const'"}
	threw := pairbench.RegistrationFailure{Tool: "find_books", File: "domains/books.example/tools/find_books.js", Line: 3,
		URL: "http://books.example/", Error: "TypeError: x is not a function"}
	elsewhere := pairbench.RegistrationFailure{Tool: "find_books", URL: "http://books.example/other", Error: "not here"}
	unplanned := pairbench.RegistrationFailure{Tool: "weather_now", URL: "http://books.example/", Error: "not ours"}
	broken := &scriptedBrowser{live: []webmcp.Tool{liveEntryTool(true)}, failed: []pairbench.RegistrationFailure{threw, syntax, elsewhere, unplanned}}
	browsers := &queuedBrowsers{queue: []*scriptedBrowser{broken, {}, {}}}
	_, err := SetUpBrowser(t.Context(), setupLog, browsers, SetupSpec{
		Arm: pairbench.Treatment, StartURL: "http://books.example/", Tools: tools, EntryTool: "list_genre"})
	var setupErr *SetupError
	require.ErrorAs(t, err, &setupErr)
	assert.Equal(t, []pairbench.RegistrationFailure{syntax, threw}, setupErr.Unregistered, "the entry tool's first, only this page's, only the plan's tools")
	assert.Equal(t, "tool list_genre (domains/books.example/tools/list_genre.js) did not register on http://books.example/: "+
		"the browser cannot compile the file: SyntaxError: Unexpected token 'const'; "+
		"tool find_books (domains/books.example/tools/find_books.js:3) did not register on http://books.example/: TypeError: x is not a function",
		setupErr.Reason())
	assert.Equal(t, 1, browsers.opened, "a registration failure is not retried")
	assert.True(t, broken.isClosed())
}

func TestSetUpBrowserRunsTheSignedInCheck(t *testing.T) {
	check := intents.Tool{Name: "signed_in"}
	for _, arm := range pairbench.Arms {
		signedIn := &scriptedBrowser{live: []webmcp.Tool{liveEntryTool(true)}}
		spec := SetupSpec{Arm: arm, StartURL: "http://books.example/", SignedInCheck: &check}
		if arm == pairbench.Treatment {
			spec.Tools, spec.EntryTool = []intents.Tool{{Name: "find_books"}}, "find_books"
		} else {
			signedIn.live = nil
		}
		setup, err := SetUpBrowser(t.Context(), setupLog, &queuedBrowsers{queue: []*scriptedBrowser{signedIn}}, spec)
		require.NoError(t, err, arm)
		assert.Equal(t, "signed_in", setup.SignedIn, arm)
		assert.Equal(t, pairbench.WebMCPPolyfill, setup.WebMCP, arm)
		assert.Equal(t, "Scripted/1", setup.Env.Browser, arm)
	}

	lapsed := &scriptedBrowser{check: webmcp.Result{Exception: "Error: signed out"}}
	browsers := &queuedBrowsers{queue: []*scriptedBrowser{lapsed, {}}}
	_, err := SetUpBrowser(t.Context(), setupLog, browsers,
		SetupSpec{Arm: pairbench.Control, StartURL: "http://books.example/", SignedInCheck: &check})
	var setupErr *SetupError
	require.ErrorAs(t, err, &setupErr)
	assert.True(t, setupErr.SignedOut)
	assert.Equal(t, "signed-in check signed_in failed on http://books.example/ (the profile's session has lapsed?): Error: signed out",
		setupErr.Reason())
	assert.Equal(t, 1, browsers.opened, "another browser loads the same lapsed session")
	assert.True(t, lapsed.isClosed())
}

func TestSetUpBrowserStopsWhenTheContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	hanging := &scriptedBrowser{blockLoad: true}
	browsers := &queuedBrowsers{queue: []*scriptedBrowser{hanging, {}, {}}}
	done := make(chan error, 1)
	go func() {
		_, err := SetUpBrowser(ctx, setupLog, browsers, SetupSpec{Arm: pairbench.Control, StartURL: "http://books.example/"})
		done <- err
	}()
	cancel()
	err := <-done
	assert.ErrorIs(t, err, context.Canceled)
	var setupErr *SetupError
	assert.False(t, errors.As(err, &setupErr), "a canceled setup is not a failed one")
	assert.Equal(t, 1, browsers.opened, "no fresh browser after the context ended")
	assert.True(t, hanging.isClosed())
}

func TestSetUpBrowserRejectsBadSpecs(t *testing.T) {
	browsers := &queuedBrowsers{}
	_, err := SetUpBrowser(t.Context(), setupLog, browsers, SetupSpec{Arm: "both"})
	assert.ErrorContains(t, err, `unknown arm "both"`)
	assert.Zero(t, browsers.opened)
}
