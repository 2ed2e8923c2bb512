package driver

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto"
	"github.com/chromedp/cdproto/cdp"
	jsonv2 "github.com/chromedp/cdproto/cdp/jsonv2"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/cdproto/webmcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/browser/internal/cdpconn"
	"github.com/pairbench/pairbench/browser/internal/testsite"
	"github.com/pairbench/pairbench/internal/sandboxtest"
	"github.com/pairbench/pairbench/runner"
)

// nativeSwitch turns on this Chromium's own WebMCP (docs/browsers.md, "Chromium's
// own WebMCP, measured").
const nativeSwitch = "--enable-blink-features=WebMCP"

// allTools is every tool name of env's frames, sorted.
func allTools(env *pairbench.WebMCPEnv) []string {
	var names []string
	for _, tools := range maps.All(env.FrameTools) {
		names = append(names, tools...)
	}
	slices.Sort(names)
	return names
}

func TestWebMCPEnvReportsTheBrowsersOwnToolsPerFrame(t *testing.T) {
	site := testsite.New(t)
	p := newProvider(t, site, func(c *LocalConfig) { c.Flags = []string{nativeSwitch} })

	control, err := setUp(t, p, runner.SetupSpec{Arm: pairbench.Control, StartURL: "http://books.test/hours"})
	require.NoError(t, err)
	env := control.Env
	require.NotNil(t, env)
	assert.True(t, strings.HasPrefix(env.Browser, "Chrome/"), env.Browser)
	assert.Equal(t, []string{nativeSwitch}, env.Switches)
	assert.True(t, env.DevTools, "this Chromium's WebMCP domain answers")
	assert.Equal(t, pairbench.WebMCPNative, control.WebMCP)
	require.Len(t, env.FrameTools, 1, "the page's own tool, in its one frame: %v", env.FrameTools)
	assert.Equal(t, []string{"shop_hours"}, allTools(env))

	// Treatment's tools register through the browser's own WebMCP: the
	// browser itself reports them.
	treatment, err := setUp(t, p, runner.SetupSpec{
		Arm: pairbench.Treatment, StartURL: "http://books.test/hours",
		Tools: testsite.BookTools(t), EntryTool: "find_books",
	})
	require.NoError(t, err)
	assert.Equal(t, []string{"explode", "find_books", "out_of_stock", "shop_hours"}, allTools(treatment.Env))
	assert.False(t, control.Env.Differs(treatment.Env), "both arms ran in one environment")
}

func TestWebMCPEnvWithThePolyfillReportsNoBrowserTools(t *testing.T) {
	site := testsite.New(t)
	p := newProvider(t, site)

	treatment, err := setUp(t, p, runner.SetupSpec{
		Arm: pairbench.Treatment, StartURL: "http://books.test/hours",
		Tools: testsite.BookTools(t), EntryTool: "find_books",
	})
	require.NoError(t, err)
	env := treatment.Env
	require.NotNil(t, env)
	assert.Equal(t, pairbench.WebMCPPolyfill, treatment.WebMCP)
	assert.Empty(t, env.Switches)
	assert.True(t, env.DevTools, "the domain answers without WebMCP")
	assert.Empty(t, env.FrameTools, "tools of a script polyfill are invisible to the browser")
	assert.Equal(t, []string{"shop_hours"}, treatment.Native, "they are live all the same")

	native := &pairbench.WebMCPEnv{Browser: env.Browser, Switches: []string{nativeSwitch}, DevTools: true}
	assert.True(t, env.Differs(native), "a pair with the switch in one arm only differs")
}

// TestChromiumWebMCPDomain pins what docs/browsers.md says this Chromium's
// DevTools WebMCP domain does with its own WebMCP on: script and form tools
// listed per frame, invokeTool answered with an invocation id and followed
// by toolInvoked and toolResponded, a form without a submit button an
// error, an unknown tool a protocol error. Rerun it after a browser upgrade.
func TestChromiumWebMCPDomain(t *testing.T) {
	site := testsite.New(t)
	p := newProvider(t, site, func(c *LocalConfig) { c.Flags = []string{nativeSwitch} })
	setup, err := setUp(t, p, runner.SetupSpec{Arm: pairbench.Control, StartURL: "http://books.test/formtool"})
	require.NoError(t, err)
	assert.Equal(t, []string{"add", "search_books"}, allTools(setup.Env))
	b := Driven(setup.Browser)
	tb, err := b.current(t.Context())
	require.NoError(t, err)

	events := make(chan *cdproto.Message, 16)
	b.mu.Lock()
	b.webmcpSink = func(msg *cdproto.Message) {
		if msg.Method == cdproto.MethodType(webmcp.ToolInvoked.Method) || msg.Method == cdproto.MethodType(webmcp.ToolResponded.Method) {
			events <- msg
		}
	}
	b.mu.Unlock()
	var frame cdp.FrameID
	for f := range setup.Env.FrameTools {
		frame = cdp.FrameID(f)
	}

	invoke := func(tool, input string) string {
		res, err := cdpconn.Send(t.Context(), b.conn, tb.session, webmcp.InvokeTool, webmcp.InvokeToolParams{FrameID: frame, ToolName: tool, Input: []byte(input)})
		require.NoError(t, err)
		require.NotEmpty(t, res.InvocationID)
		return res.InvocationID
	}
	next := func() *cdproto.Message {
		select {
		case msg := <-events:
			return msg
		case <-time.After(testsite.Patience):
			t.Fatal("no WebMCP event")
			return nil
		}
	}

	id := invoke("add", `{"a":2,"b":3}`)
	var invoked webmcp.EventToolInvoked
	require.NoError(t, jsonv2.Unmarshal(next().Params, &invoked))
	assert.Equal(t, webmcp.EventToolInvoked{ToolName: "add", FrameID: frame, InvocationID: id, Input: `{"a":2,"b":3}`}, invoked)
	var responded webmcp.EventToolResponded
	require.NoError(t, jsonv2.Unmarshal(next().Params, &responded))
	assert.Equal(t, id, responded.InvocationID)
	assert.Equal(t, webmcp.InvocationStatusCompleted, responded.Status)
	assert.JSONEq(t, `{"sum":5}`, string(responded.Output), "the tool's JSON string, parsed")
	var seen string
	require.NoError(t, b.eval(t.Context(), tb, `JSON.stringify(window.lastInput)`, &seen))
	assert.JSONEq(t, `{"a":2,"b":3}`, seen, "the page's execute gets an object")

	id = invoke("search_books", `{"q":"Ada"}`)
	require.NoError(t, jsonv2.Unmarshal(next().Params, &invoked))
	assert.Equal(t, "search_books", invoked.ToolName)
	responded = webmcp.EventToolResponded{}
	require.NoError(t, jsonv2.Unmarshal(next().Params, &responded))
	assert.Equal(t, id, responded.InvocationID)
	assert.Equal(t, webmcp.InvocationStatusError, responded.Status)
	assert.Contains(t, responded.ErrorText, "submit button")

	_, err = cdpconn.Send(t.Context(), b.conn, tb.session, webmcp.InvokeTool, webmcp.InvokeToolParams{FrameID: frame, ToolName: "nope", Input: []byte(`{}`)})
	assert.ErrorContains(t, err, "Tool not found")
}

// TestBrowserSeesTheAgentsNativeCalls: with the browser's own WebMCP, a
// call the agent makes through pairbench's webmcp tool is seen by the
// browser too, and the trial's check finds both sides agree; with the
// polyfill the browser sees nothing and there is nothing to check.
func TestBrowserSeesTheAgentsNativeCalls(t *testing.T) {
	site := testsite.New(t)
	for _, native := range []bool{true, false} {
		p := newProvider(t, site, func(c *LocalConfig) {
			if native {
				c.Flags = []string{nativeSwitch}
			}
		})
		setup, err := setUp(t, p, runner.SetupSpec{
			Arm: pairbench.Treatment, StartURL: "http://books.test/hours",
			Tools: testsite.BookTools(t), EntryTool: "find_books",
		})
		require.NoError(t, err)
		server, cs := agentSession(t, setup.Browser)
		text, isErr := callTool(t, cs, map[string]any{"action": "invoke", "tool": "find_books", "arguments": map[string]any{"author": "Ada"}})
		require.False(t, isErr, text)
		text, isErr = callTool(t, cs, map[string]any{"action": "invoke", "tool": "explode"})
		require.True(t, isErr, text)
		_, isErr = callTool(t, cs, map[string]any{"action": "invoke", "tool": "no_such_tool"})
		require.True(t, isErr)

		calls, ok := setup.Browser.BrowserCalls()
		assert.True(t, ok, "the domain answers")
		if !native {
			assert.Empty(t, calls, "the polyfill's calls are invisible to the browser")
			continue
		}
		assert.Equal(t, []pairbench.BrowserCall{{Tool: "find_books", Status: "Completed"}, {Tool: "explode", Status: "Error"}}, calls)
		row := pairbench.Row{WebMCP: server.Invocations()}
		assert.Empty(t, runner.CheckBrowserCalls(setup.Browser, setup, &row))
		assert.Equal(t, calls, row.BrowserWebMCP)
	}
}

// BenchmarkWebMCPNativeAgainstPolyfill measures a treatment trial's browser
// work in both --webmcp modes side by side (Config.WebMCP: the polyfill,
// or the browser's own WebMCP listed and invoked through DevTools):
// the setup (start, registration, load, checks, the WebMCP environment) and
// one call of a registered tool, then the close. go test's -count repeats
// each mode on its own; run the command several times instead, so the two
// alternate under the same load, and compare the ratios.
func BenchmarkWebMCPNativeAgainstPolyfill(b *testing.B) {
	site := testsite.New(b)
	initProgram := sandboxtest.InitProgram(b)
	spec := runner.SetupSpec{
		Arm: pairbench.Treatment, StartURL: "http://books.test/",
		Tools: testsite.BookTools(b), EntryTool: "find_books", Attempts: 1,
	}
	for _, mode := range []string{"polyfill", "native"} {
		b.Run(mode, func(b *testing.B) {
			p := newProvider(b, site, func(c *LocalConfig) {
				c.Executable = initProgram
				c.WebMCP = pairbench.WebMCPImpl(mode) // native: the switch, no polyfill, calls through the DevTools domain
			})
			var setupTime, invokeTime time.Duration
			for b.Loop() {
				setup, err := runner.SetUpBrowser(b.Context(), quiet, p, spec)
				if err != nil {
					b.Fatal(err)
				}
				if want := pairbench.WebMCPImpl(mode); setup.WebMCP != want {
					b.Fatalf("%s: the page's WebMCP is %q", mode, setup.WebMCP)
				}
				setupTime += setup.Timing.Total()
				start := time.Now()
				if _, err := setup.Browser.InvokeTool(b.Context(), "find_books", []byte(`{"author":"Ada"}`)); err != nil {
					b.Fatal(err)
				}
				invokeTime += time.Since(start)
				if err := setup.Browser.Close(b.Context()); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(setupTime)/float64(b.N)/1e6, "setup-ms")
			b.ReportMetric(float64(invokeTime)/float64(b.N)/1e6, "invoke-ms")
		})
	}
}

// TestBrowserCallsPastTheCapCannotTell: a browser that dropped calls past
// its cap no longer claims a whole record, so no trial is failed for calls
// it did not keep.
func TestBrowserCallsPastTheCapCannotTell(t *testing.T) {
	b := &Browser{native: map[target.SessionID]*frameTools{"s": {answered: true}}}
	invoked := func(i int) *cdproto.Message {
		return &cdproto.Message{Method: cdproto.MethodType(webmcp.ToolInvoked.Method), SessionID: "s",
			Params: fmt.Appendf(nil, `{"toolName":"flood","frameId":"F","invocationId":"%d","input":"{}"}`, i)}
	}
	for i := range maxBrowserCalls {
		b.onWebMCPEvent(invoked(i))
	}
	calls, ok := b.BrowserCalls()
	assert.Len(t, calls, maxBrowserCalls)
	assert.True(t, ok)
	b.onWebMCPEvent(invoked(maxBrowserCalls))
	calls, ok = b.BrowserCalls()
	assert.Len(t, calls, maxBrowserCalls)
	assert.False(t, ok)
}
