package driver

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	jsonv2 "github.com/chromedp/cdproto/cdp/jsonv2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/browser/internal/testsite"
	"github.com/pairbench/pairbench/intents"
	"github.com/pairbench/pairbench/runner"
)

// shadowPage registers a tool with the browser's own WebMCP, then shadows
// document.modelContext's listing and calls with lies, as a broken or
// hostile page can: only the browser's DevTools WebMCP domain still tells
// the truth.
const shadowPage = `<!doctype html><title>Shadow</title><script>
document.modelContext.registerTool({
  name: "page_echo", description: "Echoes its input.",
  inputSchema: {type: "object", properties: {say: {type: "string"}}},
  execute: async (input) => ({echo: input.say}),
});
document.modelContext.getTools = async () => [{name: "decoy", description: "Not a tool."}];
document.modelContext.executeTool = async () => "lie";
</script><h1>Shadow</h1>`

// formPage declares two form tools: order submits itself (toolautosubmit)
// to /ordered, which the site records; note is filled by the browser and
// sent only when its submit button is pressed.
const formPage = `<!doctype html><title>Forms</title>
<form toolname="order_book" tooldescription="Orders a book by its title." action="/ordered" method="get" toolautosubmit>
  <input name="title" type="text" toolparamdescription="the book's title" required>
  <input name="copies" type="number">
  <button type="submit">Order</button>
</form>
<form toolname="leave_note" tooldescription="Leaves a note for the shop." action="/noted" method="get">
  <input name="note" type="text"><button id="send" type="submit">Send</button>
</form><h1>Forms</h1>`

// nativeSite serves the pages above at native.test and records the
// requests it gets.
type nativeSite struct {
	srv  *httptest.Server
	mu   sync.Mutex
	seen []string
}

func newNativeSite(t *testing.T) *nativeSite {
	s := &nativeSite{}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.seen = append(s.seen, r.URL.RequestURI())
		s.mu.Unlock()
		switch r.URL.Path {
		case "/shadow":
			io.WriteString(w, shadowPage)
		case "/forms":
			io.WriteString(w, formPage)
		case "/api/books": // find_books's
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `[{"title":"Notes","author":"`+r.URL.Query().Get("author")+`"}]`)
		case "/ordered", "/noted":
			io.WriteString(w, "<!doctype html><title>Done</title><p>Thank you: "+r.URL.RawQuery)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *nativeSite) requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.seen...)
}

// nativeProvider is a provider in native mode that reaches site and
// native.test.
func nativeProvider(t *testing.T, site *testsite.Site, ns *nativeSite) runner.Browsers {
	return newProvider(t, site, func(c *LocalConfig) {
		c.WebMCP = pairbench.WebMCPNative
		c.Hosts["native.test"] = strings.TrimPrefix(ns.srv.URL, "http://")
	})
}

// TestNativeModeRegistersThroughTheBrowser: in native mode the provider
// turns the browser's own WebMCP on, injects no polyfill, and treatment's
// tools register with the browser itself, which lists them; the WebMCP
// environment records the mode, the switch and the page's own
// modelContext.
func TestNativeModeRegistersThroughTheBrowser(t *testing.T) {
	site := testsite.New(t)
	p := nativeProvider(t, site, newNativeSite(t))
	setup, err := setUp(t, p, runner.SetupSpec{
		Arm: pairbench.Treatment, StartURL: "http://books.test/",
		Tools: testsite.BookTools(t), EntryTool: "find_books",
	})
	require.NoError(t, err)
	b := Driven(setup.Browser)
	b.mu.Lock()
	require.NotEmpty(t, b.scripts)
	assert.NotContains(t, b.scripts[0], polyfillJS, "no polyfill is injected")
	b.mu.Unlock()

	assert.Equal(t, pairbench.WebMCPNative, setup.WebMCP)
	env := setup.Env
	require.NotNil(t, env)
	assert.Equal(t, pairbench.WebMCPNative, env.Mode)
	assert.True(t, env.PageNative)
	assert.Equal(t, []string{nativeSwitch}, env.Switches)
	assert.Equal(t, []string{"explode", "find_books", "out_of_stock"}, allTools(env), "the browser lists the registered tools")

	live, err := b.LiveTools(t.Context())
	require.NoError(t, err)
	assert.Equal(t, []string{"explode", "find_books", "out_of_stock"}, toolNames(live))
	for _, tool := range live {
		assert.True(t, tool.Registered, tool.Name)
	}
	var schema map[string]any
	require.NoError(t, json.Unmarshal(live[1].InputSchema, &schema), "find_books's schema, as the browser reports it")
	assert.Contains(t, schema["properties"], "author")
}

// TestNativeModeListsAndInvokesThroughTheDomain: the agent's webmcp tool
// lists and invokes through the browser's DevTools WebMCP domain, so a page
// that shadows document.modelContext with lies changes nothing the agent
// sees, and every call is one the browser saw.
func TestNativeModeListsAndInvokesThroughTheDomain(t *testing.T) {
	site := testsite.New(t)
	p := nativeProvider(t, site, newNativeSite(t))
	setup, err := setUp(t, p, runner.SetupSpec{
		Arm: pairbench.Treatment, StartURL: "http://native.test/shadow",
		Tools: []intents.Tool{testsite.Tool(t, "find_books", "http://native.test/*")}, EntryTool: "find_books",
	})
	require.NoError(t, err)
	server, cs := agentSession(t, setup.Browser)

	text, isErr := callTool(t, cs, map[string]any{"action": "list"})
	require.False(t, isErr, text)
	assert.Contains(t, text, `"name":"find_books"`)
	assert.Contains(t, text, `"name":"page_echo"`)
	assert.NotContains(t, text, "decoy", "the page's shadowed getTools is not asked")

	text, isErr = callTool(t, cs, map[string]any{"action": "invoke", "tool": "page_echo", "arguments": map[string]any{"say": "hi"}})
	require.False(t, isErr, text)
	assert.JSONEq(t, `{"echo":"hi"}`, text, "the page's shadowed executeTool is not asked")
	text, isErr = callTool(t, cs, map[string]any{"action": "invoke", "tool": "find_books", "arguments": map[string]any{"author": "Ada"}})
	require.False(t, isErr, text)
	assert.Contains(t, text, "Ada")
	text, isErr = callTool(t, cs, map[string]any{"action": "invoke", "tool": "decoy"})
	require.True(t, isErr)
	assert.Contains(t, text, "no tool named")

	row := pairbench.Row{WebMCP: server.Invocations()}
	assert.Empty(t, runner.CheckBrowserCalls(setup.Browser, setup, &row))
	assert.Equal(t, []pairbench.BrowserCall{{Tool: "page_echo", Status: "Completed"}, {Tool: "find_books", Status: "Completed"}}, row.BrowserWebMCP)
	assert.Equal(t, []bool{false, true, false}, []bool{row.WebMCP[0].Registered, row.WebMCP[1].Registered, row.WebMCP[2].Registered})
}

// TestNativeModeFormToolsEndToEnd: declarative form tools, listed with the
// schema the browser derives from their fields and invoked through the
// domain: a toolautosubmit form is sent, and the site gets the submission;
// a form without it is filled, and sent when its button is pressed.
func TestNativeModeFormToolsEndToEnd(t *testing.T) {
	site := testsite.New(t)
	ns := newNativeSite(t)
	p := nativeProvider(t, site, ns)
	setup, err := setUp(t, p, runner.SetupSpec{Arm: pairbench.Treatment, StartURL: "http://native.test/forms",
		Tools: []intents.Tool{testsite.Tool(t, "find_books", "http://native.test/*")}, EntryTool: "find_books"})
	require.NoError(t, err)
	assert.Equal(t, []string{"find_books", "leave_note", "order_book"}, allTools(setup.Env))
	b := Driven(setup.Browser)
	server, cs := agentSession(t, b)

	text, isErr := callTool(t, cs, map[string]any{"action": "list"})
	require.False(t, isErr, text)
	var listed struct {
		Tools []struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			InputSchema json.RawMessage `json:"inputSchema"`
		} `json:"tools"`
	}
	require.NoError(t, json.Unmarshal([]byte(text), &listed))
	require.Len(t, listed.Tools, 3, text)
	order := listed.Tools[2]
	assert.Equal(t, "order_book", order.Name)
	assert.Equal(t, "Orders a book by its title.", order.Description)
	assert.Contains(t, string(order.InputSchema), `"the book's title"`, "the schema the browser derived from the form")

	text, isErr = callTool(t, cs, map[string]any{"action": "invoke", "tool": "leave_note", "arguments": map[string]any{"note": "hello"}})
	require.False(t, isErr, text)
	assert.Contains(t, text, `"filled"`)
	tb, err := b.current(t.Context())
	require.NoError(t, err)
	var note string
	require.NoError(t, b.eval(t.Context(), tb, `document.querySelector("[name=note]").value`, &note))
	assert.Equal(t, "hello", note, "the browser filled the form")
	assert.NotContains(t, ns.requests(), "/noted?note=hello", "and did not send it")

	text, isErr = callTool(t, cs, map[string]any{"action": "invoke", "tool": "order_book", "arguments": map[string]any{"title": "Notes", "copies": 2}})
	require.False(t, isErr, text)
	assert.Eventually(t, func() bool {
		for _, r := range ns.requests() {
			if r == "/ordered?title=Notes&copies=2" {
				return true
			}
		}
		return false
	}, testsite.Patience, 20*time.Millisecond, "the site got the submission: %v", ns.requests())

	calls, ok := b.BrowserCalls()
	require.True(t, ok)
	assert.Equal(t, []pairbench.BrowserCall{{Tool: "leave_note"}, {Tool: "order_book", Status: "Completed"}}, calls,
		"the note's call waits for its button, the order's completed")
	row := pairbench.Row{WebMCP: server.Invocations()}
	assert.Empty(t, runner.CheckBrowserCalls(b, setup, &row))
}

// TestNativeControlMustBeToolFree: in native mode control's page is checked
// from the browser's side: a page with a tool of its own fails control's
// setup on its first browser with a harness error naming the tool, where
// the polyfill mode records the tool and goes on.
func TestNativeControlMustBeToolFree(t *testing.T) {
	site := testsite.New(t)
	p := nativeProvider(t, site, newNativeSite(t))

	clean, err := setUp(t, p, runner.SetupSpec{Arm: pairbench.Control, StartURL: "http://books.test/"})
	require.NoError(t, err)
	assert.Empty(t, clean.Env.FrameTools)
	live, err := clean.Browser.LiveTools(t.Context())
	require.NoError(t, err)
	assert.Empty(t, live)

	_, err = setUp(t, p, runner.SetupSpec{Arm: pairbench.Control, StartURL: "http://books.test/hours"})
	var se *runner.SetupError
	require.ErrorAs(t, err, &se)
	assert.Len(t, se.Failures, 1, "another browser loads the same page: one is enough")
	assert.True(t, strings.HasPrefix(se.Reason(), "harness error: "), se.Reason())
	assert.Contains(t, se.Reason(), "shop_hours")
	assert.Contains(t, se.Reason(), "--webmcp native")

	polyfill := newProvider(t, site, func(c *LocalConfig) { c.Flags = []string{nativeSwitch} })
	recorded, err := setUp(t, polyfill, runner.SetupSpec{Arm: pairbench.Control, StartURL: "http://books.test/hours"})
	require.NoError(t, err)
	assert.Equal(t, []string{"shop_hours"}, recorded.Native)
}

// TestNativeResponsesKeptAreBounded: a page that invokes its own tools
// without end while pairbench waits for its own call cannot make the
// browser keep more than maxResponses answers, nor more than
// maxResponseBytes of them (the newest always stays); nothing is kept
// while no call waits.
func TestNativeResponsesKeptAreBounded(t *testing.T) {
	b := &Browser{}
	b.noteInvocation(&response{id: "idle"})
	assert.Empty(t, b.responses, "no call waits")
	b.awaiting = 1
	for i := range 3 * maxResponses {
		b.noteInvocation(&response{id: fmt.Sprint(i)})
	}
	require.Len(t, b.responses, maxResponses)
	assert.Equal(t, fmt.Sprint(3*maxResponses-1), b.responses[maxResponses-1].id)
	big := jsonv2.Value(strings.Repeat("x", maxResponseBytes/2+1))
	b.noteInvocation(&response{id: "big1", output: big})
	b.noteInvocation(&response{id: "big2", output: big})
	require.Len(t, b.responses, 1)
	assert.Equal(t, "big2", b.responses[0].id)
}
