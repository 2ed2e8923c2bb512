package local

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench/intents"
	"github.com/pairbench/pairbench/internal/realstack"
	"github.com/pairbench/pairbench/internal/sandboxtest"
)

// testSite is a tiny website behind two host names, books.test and
// weather.test, that Chromium reaches through the provider's host mapping.
type testSite struct {
	srv    *httptest.Server
	stalls atomic.Int32 // requests to /stall and /trickle
	flaky  atomic.Int32 // requests to /flaky
}

const booksPage = `<!doctype html><title>Books</title><h1>Books</h1><p>Ada Lovelace: Notes, $12</p>`

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

// downloadMark is in the body of the site's /download.
const downloadMark = "echo planted-by-a-download"

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

// hostileSettles is how many of hostilePage's attempts settle, of each 7 tried.
const hostileSettles = 6

func newTestSite(t testing.TB) *testSite {
	realstack.Need(t, realstack.Bubblewrap, realstack.Chromium)
	t.Helper()
	s := &testSite{}
	mux := http.NewServeMux()
	mux.HandleFunc("books.test/{$}", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, booksPage)
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
		s.stalls.Add(1)
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
		s.stalls.Add(1)
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
		io.WriteString(w, booksPage)
	})
	// /download is a file the browser would save.
	mux.HandleFunc("books.test/download", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Disposition", `attachment; filename="planted.sh"`)
		w.Header().Set("Cache-Control", "no-store") // only a download may keep it
		io.WriteString(w, "#!/bin/sh\n"+downloadMark+"\n")
	})
	// /hostile?port=P&devtools=D is a hostile page: it tries to reach
	// loopback port P in every spelling, and the DevTools port D, with
	// every kind of request a page can make.
	mux.HandleFunc("books.test/hostile", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, hostilePage)
	})
	s.srv = httptest.NewServer(mux)
	t.Cleanup(func() {
		s.srv.CloseClientConnections()
		s.srv.Close()
	})
	return s
}

// hosts maps the site's host names to its loopback address.
func (s *testSite) hosts() map[string]string {
	addr := strings.TrimPrefix(s.srv.URL, "http://")
	return map[string]string{"books.test": addr, "weather.test": addr}
}

// testResolver answers the names the tests' browsers ask for, so that no
// test asks real DNS: a name resolving to a private address, one to the
// cloud metadata address, one to loopback; every other name fails.
var testResolver = resolverMap{
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

// patience bounds every wait in these tests for something that should
// happen: far beyond what it takes on a machine several times slower and
// busier than a developer's (CI's runs 2-3x slower), so that a test fails
// when the thing does not happen, never because the machine was slow. A
// test that passes never waits this long. The tests that need a timeout to
// run out (the stall tests) set their own short ones.
const patience = 2 * time.Minute

// newProvider returns a provider for the site whose timeouts are all
// patience: a page that must load loads, however slow the machine.
func newProvider(t testing.TB, site *testSite, mutate ...func(*Config)) *Provider {
	t.Helper()
	realstack.Need(t, realstack.Bubblewrap, realstack.Chromium)
	cfg := Config{
		Hosts:        site.hosts(),
		Resolver:     testResolver,
		TempDir:      shortTempDir(t),
		StartTimeout: patience,
		ParseTimeout: patience,
		LoadTimeout:  patience,
		Log:          slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	for _, m := range mutate {
		m(&cfg)
	}
	p, err := New(cfg)
	require.NoError(t, err)
	return p
}

// shortTempDir is a fresh directory every sandbox user may enter (a root
// launcher's browsers run as unprivileged users of their own), with a
// short path.
func shortTempDir(t testing.TB) string { return sandboxtest.TempDir(t) }

// openBrowser opens a browser that the test closes at its end.
func openBrowser(t testing.TB, p *Provider) *Browser {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	b, err := p.Open(context.Background(), runnerSpec())
	require.NoError(t, err)
	t.Cleanup(func() { b.Close(ctx) })
	return b.(*Browser)
}

// testTool reads testdata/<name>.js as a tool file, with the given
// patterns in place of its own.
func testTool(t testing.TB, name string, patterns ...string) intents.Tool {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("testdata", name+".js"))
	require.NoError(t, err)
	tool, err := intents.EvalTool(string(src), intents.ToolLimits{})
	require.NoError(t, err, name)
	tool.Path = "testdata/" + name + ".js"
	tool.URLPatterns = patterns
	return tool
}

// bookTools are the test domain's tools: three for books.test and one for
// weather.test only.
func bookTools(t testing.TB) []intents.Tool {
	return []intents.Tool{
		testTool(t, "find_books", "http://books.test/*"),
		testTool(t, "out_of_stock", "http://books.test/*"),
		testTool(t, "explode", "http://books.test/*"),
		testTool(t, "weather_now", "http://weather.test/*"),
	}
}
