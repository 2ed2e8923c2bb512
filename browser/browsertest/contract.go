// Package browsertest is the contract every browser provider passes (Run),
// local and remote alike, with real browsers, and what fakes of cloud
// browser services share (ServeDevTools).
package browsertest

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/intents"
	"github.com/pairbench/pairbench/runner"
)

// Subject is a provider under test.
type Subject struct {
	Browsers runner.Browsers
	// Shutdown shuts the provider down (its Close).
	Shutdown func(ctx context.Context) error
	// Held names whatever the provider, or the service behind it, still
	// holds for browsers: processes, directories, cloud sessions. It must
	// be empty once every browser is closed or abandoned and the provider
	// shut down (a provider may keep spares until then).
	Held func() []string
	// SlowOpens makes the opens from now on take a second or more (a
	// slow create); nil for a provider whose opens take that anyway.
	SlowOpens func()
	// Unsupported is a spec the provider refuses.
	Unsupported runner.BrowserSpec
}

// Host is the test site's host name; a provider's factory maps it to the
// address Run gives.
const Host = "shop.test"

// Run runs the contract against the providers newSubject makes, one per
// test, whose browsers reach Host at addr (127.0.0.1:PORT).
func Run(t *testing.T, newSubject func(t *testing.T, hosts map[string]string) Subject) {
	site := newSite(t)
	hosts := map[string]string{Host: site.addr}
	tool := shopTool(t)
	check := signedInTool(t)
	startURL := "http://" + Host + "/"

	t.Run("OpenLoadClose", func(t *testing.T) {
		s := newSubject(t, hosts)
		b, err := s.Browsers.Open(t.Context(), runner.BrowserSpec{})
		require.NoError(t, err)
		load, err := b.Load(t.Context(), startURL)
		require.NoError(t, err)
		assert.Equal(t, startURL, load.URL)
		assert.Equal(t, 1, load.Navigations)
		assert.False(t, load.LoadedAt.IsZero())
		live, err := b.LiveTools(t.Context())
		require.NoError(t, err)
		assert.Empty(t, live, "a page without WebMCP has no tools")
		require.NoError(t, b.Close(t.Context()))
		require.NoError(t, b.Close(t.Context()), "Close is safe twice")
		eventuallyEmpty(t, s)
	})

	t.Run("TreatmentSetupAndTheAgentsDevTools", func(t *testing.T) {
		s := newSubject(t, hosts)
		setup, err := runner.SetUpBrowser(t.Context(), quiet, s.Browsers, runner.SetupSpec{
			Arm: pairbench.Treatment, StartURL: startURL, Tools: []intents.Tool{tool}, EntryTool: tool.Name,
		})
		require.NoError(t, err)
		b := setup.Browser
		defer b.Close(t.Context())
		res, err := b.InvokeTool(t.Context(), tool.Name, []byte(`{}`))
		require.NoError(t, err)
		assert.Empty(t, res.Exception)
		assert.True(t, res.Registered)
		assert.Contains(t, res.Text, "9-17")

		// The agent's way in reaches the same page and its tools.
		agent := DialDevTools(t, b.DevTools())
		live, err := agent.LiveTools(t.Context())
		require.NoError(t, err)
		require.Len(t, live, 1)
		assert.Equal(t, tool.Name, live[0].Name)

		// Whose WebMCP the page has, as the probe, the setup and the
		// environment say it alike; the call the trial made, seen by the
		// browser's own WebMCP wherever it answered it.
		native, err := b.NativeWebMCP(t.Context())
		require.NoError(t, err)
		assert.Equal(t, setup.NativeWebMCP, native)
		wantImpl := pairbench.WebMCPPolyfill
		if native {
			wantImpl = pairbench.WebMCPNative
		}
		assert.Equal(t, wantImpl, setup.WebMCP)
		require.NotNil(t, setup.Env, "the setup records the browser's WebMCP environment")
		assert.NotEmpty(t, setup.Env.Browser, "the browser's product and version")
		assert.Equal(t, native, setup.Env.PageNative)
		row := pairbench.Row{WebMCP: []pairbench.Invocation{{Tool: tool.Name, Status: "ok"}}}
		assert.Empty(t, runner.CheckBrowserCalls(b, setup, &row))
		if calls, _ := b.BrowserCalls(); !native {
			assert.Empty(t, calls, "the polyfill's calls are invisible to the browser")
		}

		// What the trial keeps of the page the agent left: its state for
		// the checks and the judge, and a screenshot.
		page, err := b.PageState(t.Context(), []string{"h1", "#nowhere"})
		require.NoError(t, err)
		assert.Equal(t, startURL, page.URL)
		assert.Equal(t, "Shop", page.Title)
		require.Len(t, page.Elements, 2)
		assert.Equal(t, pairbench.PageElement{Selector: "h1", Found: true, Text: "Shop"}, page.Elements[0])
		assert.False(t, page.Elements[1].Found)
		png, err := b.Screenshot(t.Context())
		require.NoError(t, err)
		assert.True(t, strings.HasPrefix(string(png), "\x89PNG"), "a PNG")
		require.NoError(t, b.Close(t.Context()))
		eventuallyEmpty(t, s)
	})

	t.Run("ControlSetupHasNoCustomTools", func(t *testing.T) {
		s := newSubject(t, hosts)
		setup, err := runner.SetUpBrowser(t.Context(), quiet, s.Browsers, runner.SetupSpec{
			Arm: pairbench.Control, StartURL: startURL, SignedInCheck: &check,
		})
		require.NoError(t, err)
		b := setup.Browser
		assert.Equal(t, check.Name, setup.SignedIn, "the signed-in check passed")
		live, err := b.LiveTools(t.Context())
		require.NoError(t, err)
		assert.Empty(t, live, "the signed-in check ran unregistered")
		require.NotNil(t, setup.Env)

		// A tool run unregistered answers, or reports what it threw.
		res, err := b.RunTool(t.Context(), check, nil)
		require.NoError(t, err)
		assert.JSONEq(t, `{"heading":"Shop"}`, res.Text)
		res, err = b.RunTool(t.Context(), check, []byte(`{"selector":"#account"}`))
		require.NoError(t, err, "a tool that threw is no error")
		assert.Contains(t, res.Exception, "signed out")
		require.NoError(t, b.Close(t.Context()))
		eventuallyEmpty(t, s)
	})

	t.Run("StalledPageIsAnErrorAndTheBrowserStillCloses", func(t *testing.T) {
		s := newSubject(t, hosts)
		b, err := s.Browsers.Open(t.Context(), runner.BrowserSpec{})
		require.NoError(t, err)
		_, err = b.Load(t.Context(), startURL+"stall")
		require.Error(t, err)
		assert.Contains(t, err.Error(), "stalled")
		assert.GreaterOrEqual(t, site.stalls(), 2, "a stalled first navigation is made once more")
		require.NoError(t, b.Close(t.Context()))
		eventuallyEmpty(t, s)
	})

	t.Run("UnsupportedSpecIsRefusedAndHoldsNothing", func(t *testing.T) {
		s := newSubject(t, hosts)
		_, err := s.Browsers.Open(t.Context(), s.Unsupported)
		require.Error(t, err)
		eventuallyEmpty(t, s)
	})

	t.Run("ContextEndFreesTheBrowser", func(t *testing.T) {
		s := newSubject(t, hosts)
		ctx, cancel := context.WithCancel(t.Context())
		b, err := s.Browsers.Open(ctx, runner.BrowserSpec{})
		require.NoError(t, err)
		_, err = b.Load(ctx, startURL)
		require.NoError(t, err)
		cancel()
		assert.Eventually(t, func() bool {
			_, err := b.LiveTools(t.Context())
			return err != nil
		}, endBound, 50*time.Millisecond, "the browser ends with the context")
		require.NoError(t, b.Close(t.Context()), "Close after the context ended")
		eventuallyEmpty(t, s)
	})

	t.Run("ShutdownWithBrowsersInCreation", func(t *testing.T) {
		s := newSubject(t, hosts)
		if s.SlowOpens != nil {
			s.SlowOpens()
		}
		ctx, cancel := context.WithCancel(t.Context())
		var wg sync.WaitGroup
		var mu sync.Mutex
		var got []runner.Browser
		var cancelled atomic.Bool
		for range 2 {
			wg.Go(func() {
				b, err := s.Browsers.Open(ctx, runner.BrowserSpec{})
				if err != nil {
					return
				}
				if !cancelled.Load() {
					// Done before the shutdown began (a ready spare on a
					// quiet machine): not a browser in creation.
					b.Close(context.Background())
					return
				}
				mu.Lock()
				got = append(got, b)
				mu.Unlock()
			})
		}
		time.Sleep(300 * time.Millisecond) // both opens under way unless a provider is that fast
		cancelled.Store(true)
		cancel()
		sctx, scancel := context.WithTimeout(context.Background(), time.Minute)
		defer scancel()
		require.NoError(t, s.Shutdown(sctx))
		wg.Wait()
		assert.Empty(t, got, "an open whose context ended returns no browser")
		for _, b := range got {
			b.Close(context.Background())
		}
		eventuallyEmpty(t, s)
		_, err := s.Browsers.Open(t.Context(), runner.BrowserSpec{})
		require.Error(t, err, "no browser opens after shutdown")
		eventuallyEmpty(t, s)
	})
}

// endBound bounds the waits for a browser to end and a provider to let go
// of everything: the waits return as soon as it happened, and a busy
// machine may take far longer than a quiet one to tear Chromium down.
const endBound = 2 * time.Minute

// eventuallyEmpty shuts the provider down (again: Shutdown is safe more
// than once) and waits for it to hold nothing.
func eventuallyEmpty(t *testing.T, s Subject) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, s.Shutdown(ctx))
	var held []string
	ok := assert.Eventually(t, func() bool { held = s.Held(); return len(held) == 0 }, endBound, 50*time.Millisecond)
	if !ok {
		t.Errorf("still held: %v", held)
	}
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// site is the contract's website: a plain page and a page that never
// finishes loading.
type site struct {
	addr string
	mu   sync.Mutex
	n    int
}

func (s *site) stalls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

func newSite(t *testing.T) *site {
	s := &site{}
	mux := http.NewServeMux()
	mux.HandleFunc(Host+"/{$}", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `<!doctype html><title>Shop</title><h1>Shop</h1>`)
	})
	mux.HandleFunc(Host+"/stall", func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.n++
		s.mu.Unlock()
		io.WriteString(w, "<!doctype html><title>Loading</title><p>Loading")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
	})
	s.addr = strings.TrimPrefix(srv.URL, "http://")
	return s
}

// signedInTool is the site's signed-in check: it throws when the page
// lacks args.selector (its h1 by default).
func signedInTool(t *testing.T) intents.Tool {
	tool, err := intents.EvalTool(`({
  name: "signed_in",
  description: "Whether the shop's page shows the account.",
  inputSchema: { type: "object", properties: { selector: { type: "string" } } },
  annotations: { readOnlyHint: true },
  async execute(args) {
    const el = document.querySelector(args.selector || "h1");
    if (!el) throw new Error("signed out");
    return { heading: el.textContent };
  },
});`, intents.ToolLimits{})
	require.NoError(t, err)
	tool.Path = "signed_in.js"
	tool.URLPatterns = []string{"http://" + Host + "/*"}
	return tool
}

// shopTool is a read-only tool of the site.
func shopTool(t *testing.T) intents.Tool {
	tool, err := intents.EvalTool(`({
  name: "shop_hours",
  description: "The shop's opening hours.",
  inputSchema: { type: "object", properties: {} },
  annotations: { readOnlyHint: true },
  async execute() { return { open: "9-17" }; },
});`, intents.ToolLimits{})
	require.NoError(t, err)
	tool.Path = "shop_hours.js"
	tool.URLPatterns = []string{"http://" + Host + "/*"}
	return tool
}
