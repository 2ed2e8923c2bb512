// Package testsite is the tiny website the browser packages' tests drive
// real Chromium on (books.test and weather.test behind the local
// provider's host mapping, with pages hostile and benign), its tool
// files, and the bound on their waits.
package testsite

import (
	"context"
	"embed"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench/intents"
	"github.com/pairbench/pairbench/internal/realstack"
)

// Site is a tiny website behind two host names, books.test and
// weather.test, that Chromium reaches through the provider's host mapping.
type Site struct {
	srv    *httptest.Server
	Stalls atomic.Int32 // requests to /stall and /trickle
	flaky  atomic.Int32 // requests to /flaky
}

// BooksPage is books.test's home page.
const BooksPage = `<!doctype html><title>Books</title><h1>Books</h1><p>Ada Lovelace: Notes, $12</p>`

// nativePage brings its own copy of the polyfill and registers a tool of its
// own, as a site that adopted WebMCP does.
const nativePage = `<!doctype html><title>Hours</title>
<script src="/polyfill.js"></script>
<script>
document.modelContext.registerTool({
  name: "shop_hours",
  description: "The shop's opening hours.",
  inputSchema: {type: "object", properties: {}},
  annotations: {readOnlyHint: true},
  execute: async () => ({open: "9-17"}),
});
</script><h1>Hours</h1>`

// formToolPage declares a form tool (WebMCP's declarative half) without a
// submit button, and registers a script tool with the browser's own WebMCP
// where it has one; the tool keeps what it was given.
const formToolPage = `<!doctype html><title>Search</title>
<form toolname="search_books" tooldescription="Searches the books." action="/"><input name="q" type="text"></form>
<script>
if (document.modelContext) document.modelContext.registerTool({
  name: "add",
  description: "Adds a and b.",
  inputSchema: {type: "object", properties: {a: {type: "number"}, b: {type: "number"}}},
  execute: async (input) => { window.lastInput = input; return JSON.stringify({sum: input.a + input.b}); },
});
</script><h1>Search</h1>`

// floodPage's own tool answers with as many bytes as it is asked for, as a
// hostile page's tool can.
const floodPage = `<!doctype html><title>Flood</title>
<script src="/polyfill.js"></script>
<script>
document.modelContext.registerTool({
  name: "flood",
  description: "Returns n bytes.",
  inputSchema: {type: "object", properties: {n: {type: "integer"}}},
  execute: async ({n}) => "x".repeat(n),
});
</script><h1>Flood</h1>`

// refusingPage asks for n destinations the egress refuses (loopback), one
// after another, and counts them in window.asked.
const refusingPage = `<!doctype html><title>Refusing</title><script>
window.asked = 0;
(async () => {
  const n = Number(new URLSearchParams(location.search).get("n"));
  for (let i = 0; i < n; i++) {
    await fetch("http://127.0.0.1:8080/" + i, {mode: "no-cors"}).catch(() => {});
    window.asked++;
  }
})();
</script>`

// probePage's first script lists the tools live when page scripts start.
const probePage = `<!doctype html><title>Probe</title><script>
window.probe = "no WebMCP";
if (document.modelContext) document.modelContext.getTools().then((ts) => { window.probe = ts.map((t) => t.name).join(","); });
</script>`

// DownloadMark is in the body of the site's /download.
const DownloadMark = "echo planted-by-a-download"

// hostilePage counts its attempts in window.tried, and in window.settled
// those whose outcome a page sees (all but the beacons) once it is known.
const hostilePage = `<!doctype html><title>Hostile</title><body><script>
const q = new URLSearchParams(location.search);
const port = q.get("port"), devtools = q.get("devtools");
const hosts = ["127.0.0.1", "localhost", "[::1]", "0.0.0.0", "0x7f000001", "2130706433", "127.1",
  "[::ffff:127.0.0.1]", "017700000001"].map((h) => h + ":" + port);
hosts.push("127.0.0.1:" + devtools, "localhost:" + devtools);
window.tried = 0;
window.settled = 0;
const settle = () => { window.settled++; };
for (const h of hosts) {
  fetch("http://" + h + "/fetch", {mode: "no-cors"}).then(settle, settle);
  fetch("http://" + h + "/json/version").then(settle, settle);
  const x = new XMLHttpRequest(); x.onloadend = settle; x.open("GET", "http://" + h + "/xhr"); x.send();
  const img = new Image(); img.onload = img.onerror = settle; img.src = "http://" + h + "/img";
  const f = document.createElement("iframe"); f.onload = settle; f.src = "http://" + h + "/iframe"; document.body.appendChild(f);
  try { const ws = new WebSocket("ws://" + h + "/ws"); ws.onclose = settle; } catch (e) { settle(); }
  navigator.sendBeacon("http://" + h + "/beacon", "x");
  window.tried += 7;
}
</script>`

// HostileSettles is how many of hostilePage's attempts settle, of each 7 tried.
const HostileSettles = 6

// New serves the site until the test ends. It needs the real stack
// (bubblewrap and Chromium): every test of it starts a browser.
func New(t testing.TB) *Site {
	realstack.Need(t, realstack.Bubblewrap, realstack.Chromium)
	t.Helper()
	polyfillJS := polyfill(t)
	s := &Site{}
	mux := http.NewServeMux()
	mux.HandleFunc("books.test/{$}", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, BooksPage)
	})
	mux.HandleFunc("books.test/api/books", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `[{"title":"Notes","author":%q,"price":12}]`, r.URL.Query().Get("author"))
	})
	mux.HandleFunc("books.test/hours", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, nativePage)
	})
	mux.HandleFunc("books.test/formtool", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, formToolPage)
	})
	mux.HandleFunc("books.test/flood", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, floodPage)
	})
	mux.HandleFunc("books.test/refusing", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, refusingPage)
	})
	mux.HandleFunc("books.test/polyfill.js", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/javascript")
		io.WriteString(w, polyfillJS)
	})
	// /stall never answers: a start page that stays "loading" forever.
	mux.HandleFunc("books.test/stall", func(w http.ResponseWriter, r *http.Request) {
		s.Stalls.Add(1)
		<-r.Context().Done()
	})
	mux.HandleFunc("weather.test/{$}", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `<!doctype html><title>Weather</title><h1>Sunny</h1>`)
	})
	// /probe records, from its first script, which tools were live before
	// any page script ran.
	mux.HandleFunc("books.test/probe", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, probePage)
	})
	// /opener opens /probe in a new tab, with and without an opener.
	mux.HandleFunc("books.test/opener", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `<!doctype html><title>Opener</title>
<a id="blank" href="/probe" target="_blank">new tab</a>`)
	})
	// /trickle commits the document but never finishes it: the page stays
	// in readyState "loading", the stall the seed saw on real sites.
	mux.HandleFunc("books.test/trickle", func(w http.ResponseWriter, r *http.Request) {
		s.Stalls.Add(1)
		io.WriteString(w, "<!doctype html><title>Loading</title><p>Loading")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	})
	// /flaky stalls its first request only, then serves the page.
	mux.HandleFunc("books.test/flaky", func(w http.ResponseWriter, r *http.Request) {
		if s.flaky.Add(1) == 1 {
			<-r.Context().Done()
			return
		}
		io.WriteString(w, BooksPage)
	})
	// /download is a file the browser would save.
	mux.HandleFunc("books.test/download", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Disposition", `attachment; filename="planted.sh"`)
		w.Header().Set("Cache-Control", "no-store") // only a download may keep it
		io.WriteString(w, "#!/bin/sh\n"+DownloadMark+"\n")
	})
	// /hostile?port=P&devtools=D is a hostile page: it tries to reach
	// loopback port P in every spelling, and the DevTools port D, with
	// every kind of request a page can make.
	mux.HandleFunc("books.test/hostile", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, hostilePage)
	})
	s.serve(t, mux)
	return s
}

// Serve serves h as the site, under the site's host names, until the
// test ends.
func Serve(t testing.TB, h http.Handler) *Site {
	s := &Site{}
	s.serve(t, h)
	return s
}

func (s *Site) serve(t testing.TB, h http.Handler) {
	s.srv = httptest.NewServer(h)
	t.Cleanup(func() {
		s.srv.CloseClientConnections()
		s.srv.Close()
	})
}

// Hosts maps the site's host names to its loopback address.
func (s *Site) Hosts() map[string]string {
	addr := strings.TrimPrefix(s.srv.URL, "http://")
	return map[string]string{"books.test": addr, "weather.test": addr}
}

// Resolver answers the names the tests' browsers ask for, so that no
// test asks real DNS: a name resolving to a private address, one to the
// cloud metadata address, one to loopback; every other name fails.
var Resolver = resolverMap{
	"intranet.test": {netip.MustParseAddr("10.0.0.5")},
	"metadata.test": {netip.MustParseAddr("169.254.169.254")},
	"rebind.test":   {netip.MustParseAddr("127.0.0.1")},
}

type resolverMap map[string][]netip.Addr

func (m resolverMap) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if a, ok := m[host]; ok {
		return a, nil
	}
	return nil, &net.DNSError{Err: "no such host (test resolver)", Name: host, IsNotFound: true}
}

// Patience bounds every wait in these tests for something that should
// happen: far beyond what it takes on a machine several times slower and
// busier than a developer's (CI's runs 2-3x slower), so that a test fails
// when the thing does not happen, never because the machine was slow. A
// test that passes never waits this long. The tests that need a timeout to
// run out (the stall tests) set their own short ones.
const Patience = 2 * time.Minute

// Tool reads testdata/<name>.js as a tool file, with the given patterns
// in place of its own.
func Tool(t testing.TB, name string, patterns ...string) intents.Tool {
	t.Helper()
	src, err := toolFiles.ReadFile("testdata/" + name + ".js")
	require.NoError(t, err)
	tool, err := intents.EvalTool(string(src), intents.ToolLimits{})
	require.NoError(t, err, name)
	tool.Path = "testdata/" + name + ".js"
	tool.URLPatterns = patterns
	return tool
}

// BookTools are the test domain's tools: three for books.test and one for
// weather.test only.
func BookTools(t testing.TB) []intents.Tool {
	return []intents.Tool{
		Tool(t, "find_books", "http://books.test/*"),
		Tool(t, "out_of_stock", "http://books.test/*"),
		Tool(t, "explode", "http://books.test/*"),
		Tool(t, "weather_now", "http://weather.test/*"),
	}
}

//go:embed testdata/*.js
var toolFiles embed.FS

// polyfill is the driver's copy of the WebMCP polyfill, which the site's
// pages that bring their own serve as /polyfill.js.
func polyfill(t testing.TB) string {
	t.Helper()
	_, here, _, ok := runtime.Caller(0)
	require.True(t, ok)
	src, err := os.ReadFile(filepath.Join(filepath.Dir(here), "..", "..", "driver", "polyfill", "webmcp-polyfill.iife.js"))
	require.NoError(t, err)
	return string(src)
}
