package toolcheck

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/browser/local"
	"github.com/pairbench/pairbench/intents"
	"github.com/pairbench/pairbench/internal/offline"
	"github.com/pairbench/pairbench/internal/realstack"
	"github.com/pairbench/pairbench/internal/sandboxtest"
	"github.com/pairbench/pairbench/runner"
	"github.com/pairbench/pairbench/sandbox"
)

// TestMain runs the tests inside a network namespace with loopback only,
// and lets the test binary serve as the sandbox's init inside the
// browsers' sandboxes, as pairbench's own binary does.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == sandbox.InitArg {
		os.Exit(sandbox.RunInit(os.Args[2:]))
	}
	offline.Main(m)
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// strictCSP forbids eval, new Function and inline scripts; the pages' own
// scripts come from the site. An eval-based wrapper fails under it as soon as
// a page script triggers a registration (a same-document navigation).
const strictCSP = "default-src 'none'; script-src 'self'; connect-src 'self'; base-uri 'none'; require-trusted-types-for 'script'"

// spaGo tells the /spa page of formsSite to move on.
var spaGo atomic.Bool

// formsSite serves forms.test and other.test: every page under strictCSP,
// /api/ping for the async helper, and /spa, whose own script moves to /all
// with history.pushState, from a fetch callback, once spaGo is set.
func formsSite(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Security-Policy", strictCSP)
		switch r.URL.Path {
		case "/api/ping":
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"pong":true}`)
		case "/api/go":
			if spaGo.Load() {
				io.WriteString(w, "yes")
			}
		case "/spa.js":
			w.Header().Set("Content-Type", "text/javascript")
			io.WriteString(w, `const poll = async () => {
  const r = await fetch("/api/go");
  if ((await r.text()) === "yes") history.pushState({}, "", "/all");
  else setTimeout(poll, 50);
};
poll();`)
		case "/spa":
			io.WriteString(w, `<!doctype html><title>SPA</title><script src="/spa.js"></script><h1>app</h1>`)
		default:
			io.WriteString(w, `<!doctype html><title>Forms</title><h1>forms</h1>`)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// countingBrowsers counts the browsers opened.
type countingBrowsers struct {
	runner.Browsers
	opened atomic.Int32
}

func (c *countingBrowsers) Open(ctx context.Context, spec runner.BrowserSpec) (runner.Browser, error) {
	c.opened.Add(1)
	return c.Browsers.Open(ctx, spec)
}

func provider(t *testing.T, hosts map[string]string, flags ...string) *countingBrowsers {
	t.Helper()
	realstack.Need(t, realstack.Bubblewrap, realstack.Chromium)
	p, err := local.New(local.Config{Hosts: hosts, Flags: flags, TempDir: sandboxtest.TempDir(t),
		ParseTimeout: 10 * time.Second, LoadTimeout: 10 * time.Second, Log: quiet})
	require.NoError(t, err)
	return &countingBrowsers{Browsers: p}
}

func siteHosts(srv *httptest.Server, hosts ...string) map[string]string {
	m := map[string]string{}
	for _, h := range hosts {
		m[h] = strings.TrimPrefix(srv.URL, "http://")
	}
	return m
}

// formTools reads every documented tool-file form, the files package intents
// accepts in TestToolFileForms, plus variants of the plainest one with CRLF
// line ends and a byte order mark.
func formTools(t *testing.T) []intents.Tool {
	t.Helper()
	dir := filepath.Join("..", "..", "intents", "testdata", "toolforms")
	files, err := filepath.Glob(filepath.Join(dir, "*.js"))
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(files), 6)
	srcs := map[string]string{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		srcs["intents/testdata/toolforms/"+filepath.Base(f)] = string(b)
	}
	plain := srcs["intents/testdata/toolforms/literal.js"]
	rename := func(form string) string {
		return strings.NewReplacer(`"form_literal"`, `"form_`+form+`"`, "/literal/", "/"+form+"/", `form: "literal"`, `form: "`+form+`"`).Replace(plain)
	}
	srcs["crlf.js"] = strings.ReplaceAll(rename("crlf"), "\n", "\r\n")
	srcs["byte_order_mark.js"] = "\ufeff" + rename("byte_order_mark")
	var tools []intents.Tool
	for path, src := range srcs {
		tool, err := intents.EvalTool(src, intents.ToolLimits{})
		require.NoError(t, err, path)
		tool.Path = path
		tools = append(tools, tool)
	}
	slices.SortFunc(tools, func(a, b intents.Tool) int { return strings.Compare(a.Name, b.Name) })
	return tools
}

func names(tools []intents.Tool) []string {
	var out []string
	for _, t := range tools {
		out = append(out, t.Name)
	}
	return out
}

// TestEveryDocumentedFormRegisters registers a tool file of every documented
// form in Chromium, on pages under a strict CSP, and checks that each is
// live, as a registered tool, exactly where its patterns match; that its
// statements are there when execute runs; and that a registration the page
// itself triggers (a same-document navigation) needs no eval.
func TestEveryDocumentedFormRegisters(t *testing.T) {
	srv := formsSite(t)
	tools := formTools(t)
	all := names(tools)
	b, err := provider(t, siteHosts(srv, "forms.test")).Open(t.Context(), runner.BrowserSpec{})
	require.NoError(t, err)
	defer b.Close(context.Background())
	require.NoError(t, b.RegisterTools(t.Context(), tools))

	liveOn := func(url string) []string {
		t.Helper()
		load, err := b.Load(t.Context(), url)
		require.NoError(t, err, url)
		live, err := b.LiveTools(t.Context())
		require.NoError(t, err)
		var got []string
		for _, l := range live {
			if l.Registered {
				got = append(got, l.Name)
			}
		}
		failed, err := b.RegistrationFailures(t.Context())
		require.NoError(t, err)
		require.Empty(t, failed, "on %s", load.URL)
		return got
	}
	assert.Equal(t, all, liveOn("http://forms.test/all"), "every form is live where all match")
	for _, name := range all {
		form := strings.TrimPrefix(name, "form_")
		assert.Equal(t, []string{name}, liveOn("http://forms.test/"+form+"/page"), "only %s on its own page", name)
	}
	assert.Empty(t, liveOn("http://forms.test/none"), "none where no pattern matches")

	// Each execute sees its file's statements.
	liveOn("http://forms.test/all")
	for _, name := range all {
		args := json.RawMessage(`{}`)
		if name == "form_shared_constant" {
			args = json.RawMessage(`{"genre":"poetry"}`)
		}
		res, err := b.InvokeTool(t.Context(), name, args)
		require.NoError(t, err)
		require.Empty(t, res.Exception, name)
		assert.Contains(t, res.Text, `"form":"`+strings.TrimPrefix(name, "form_")+`"`, name)
		switch name {
		case "form_shared_constant":
			assert.Contains(t, res.Text, `"known":true`)
		case "form_helper_statements":
			assert.Contains(t, res.Text, `"label":"form x"`)
		case "form_async_helper":
			assert.Contains(t, res.Text, `"body":{"pong":true}`)
		case "form_strict_mode":
			assert.Contains(t, res.Text, `"strict":true`)
		}
	}

	// The page's own script moves to /all: the registry registers every
	// tool then, from a page task, under the CSP.
	spaGo.Store(false)
	assert.Empty(t, liveOn("http://forms.test/spa"))
	spaGo.Store(true)
	require.Eventually(t, func() bool {
		live, err := b.LiveTools(t.Context())
		return err == nil && len(live) == len(all)
	}, 10*time.Second, 50*time.Millisecond, "the tools register after the page's pushState")
	failed, err := b.RegistrationFailures(t.Context())
	require.NoError(t, err)
	assert.Empty(t, failed)

	// The same, as Check sees it.
	pages := []Page{{URL: "http://forms.test/all"}, {URL: "http://forms.test/none"}}
	for _, name := range all {
		pages = append(pages, Page{URL: "http://forms.test/" + strings.TrimPrefix(name, "form_") + "/x", Entry: name})
	}
	problems, err := Check(t.Context(), provider(t, siteHosts(srv, "forms.test")), []Set{{Tools: tools, Pages: pages}})
	require.NoError(t, err)
	assert.Empty(t, problems)
}

// brokenTools are tool files validate accepts that do not register in the
// page, each for another reason.
func brokenTools(t *testing.T) []intents.Tool {
	t.Helper()
	var out []intents.Tool
	for path, src := range map[string]string{
		// goja accepts the legacy octal escape in strict code; V8 does not.
		"domains/forms.test/tools/octal.js": `"use strict";
const SEP = "\08";
({ name: "octal", description: "d", urlPatterns: ["http://forms.test/*"], execute() { return {}; } })`,
		// Throws only where there is a document.
		"domains/forms.test/tools/page_only.js": `const inPage = typeof document !== "undefined";

if (inPage) throw new TypeError("only in the page");
({ name: "page_only", description: "d", urlPatterns: ["http://forms.test/*"], execute() { return {}; } })`,
		// Names and describes itself differently in the page.
		"domains/forms.test/tools/two_names.js": `const inPage = typeof document !== "undefined";
({ name: inPage ? "other_name" : "two_names", description: inPage ? "another" : "d",
  inputSchema: { type: "object", properties: { n: { type: "number", maximum: 0.1 } } },
  urlPatterns: ["http://forms.test/*"], execute() { return {}; } })`,
		"domains/forms.test/tools/fine.js": `({ name: "fine", description: "d", urlPatterns: ["http://forms.test/*"], execute() { return {}; } })`,
	} {
		tool, err := intents.EvalTool(src, intents.ToolLimits{})
		require.NoError(t, err, "validate accepts %s", path)
		tool.Path = path
		out = append(out, tool)
	}
	slices.SortFunc(out, func(a, b intents.Tool) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// TestRegistrationFailuresNameToolFileAndBrowserMessage checks what a tool
// file that fails in the page leaves: the trial's setup aborts at once, its
// reason naming the tool, its file and the browser's own message, and Check
// reports each failing tool with its line.
func TestRegistrationFailuresNameToolFileAndBrowserMessage(t *testing.T) {
	srv := formsSite(t)
	tools := brokenTools(t)
	browsers := provider(t, siteHosts(srv, "forms.test"))

	_, err := runner.SetUpBrowser(t.Context(), quiet, browsers, runner.SetupSpec{Arm: pairbench.Treatment,
		StartURL: "http://forms.test/", Tools: tools, EntryTool: "octal"})
	var se *runner.SetupError
	require.ErrorAs(t, err, &se)
	assert.EqualValues(t, 1, browsers.opened.Load(), "no fresh browser for a tool file that fails")
	assert.True(t, strings.HasPrefix(se.Reason(),
		"tool octal (domains/forms.test/tools/octal.js) did not register on http://forms.test/: the browser cannot compile the file: SyntaxError: Octal escape sequences are not allowed"),
		se.Reason())
	assert.Contains(t, se.Reason(), "tool page_only (domains/forms.test/tools/page_only.js:3) did not register on http://forms.test/: TypeError: only in the page")
	assert.Contains(t, se.Reason(), `tool two_names (domains/forms.test/tools/two_names.js) did not register on http://forms.test/: in the browser the file gives the tool another name, description than where pairbench read it`)
	assert.NotContains(t, se.Reason(), "tool fine")
	require.Len(t, se.Unregistered, 3)
	assert.Equal(t, pairbench.RegistrationFailure{Tool: "page_only", File: "domains/forms.test/tools/page_only.js", Line: 3,
		URL: "http://forms.test/", Error: "TypeError: only in the page"}, se.Unregistered[1])

	problems, err := Check(t.Context(), browsers, []Set{{Tools: tools, Pages: []Page{{URL: "http://forms.test/x", For: "a test"}}}})
	require.NoError(t, err)
	var got []string
	for _, p := range problems {
		got = append(got, p.String())
	}
	require.Len(t, got, 3, "%q", got)
	assert.Contains(t, got[0], "tool octal (domains/forms.test/tools/octal.js) on http://forms.test/x (a test): did not register: the browser cannot compile the file: SyntaxError")
	assert.Equal(t, "tool page_only (domains/forms.test/tools/page_only.js:3) on http://forms.test/x (a test): did not register: TypeError: only in the page", got[1])
	assert.Contains(t, got[2], "tool two_names (domains/forms.test/tools/two_names.js) on http://forms.test/x (a test): did not register: in the browser the file gives the tool another name")
}

// TestForPlanCoversEveryDomainAndEntryTool is the smoke gate's treatment
// check: one browser for two domains, every intent's start page, and the
// one domain whose entry tool cannot register named.
func TestForPlanCoversEveryDomainAndEntryTool(t *testing.T) {
	srv := formsSite(t)
	forms := formTools(t)
	other, err := intents.EvalTool(`const KINDS = ["a"]
({ name: "other", description: "d", urlPatterns: ["http://other.test/*"], execute() { return {}; } })`, intents.ToolLimits{})
	require.Error(t, err, "validate refuses the missing semicolon")
	other, err = intents.EvalTool(`"use strict";
const SEP = "\08";
({ name: "other", description: "d", urlPatterns: ["http://other.test/*"], execute() { return {}; } })`, intents.ToolLimits{})
	require.NoError(t, err)
	other.Path = "domains/other.test/tools/other.js"
	tis := []*runner.TrialIntent{
		{Intent: intents.Intent{ID: "forms-literal", Domain: "forms.test", StartURL: "http://forms.test/literal/", EntryTool: "form_literal"}, Tools: forms},
		{Intent: intents.Intent{ID: "forms-async", Domain: "forms.test", StartURL: "http://forms.test/async_helper/", EntryTool: "form_async_helper"}, Tools: forms},
		{Intent: intents.Intent{ID: "other-one", Domain: "other.test", StartURL: "http://other.test/", EntryTool: "other"}, Tools: []intents.Tool{other}},
	}
	sets := ForPlan(tis)
	require.Len(t, sets, 1, "the domains' tools never meet on a page: one browser")
	assert.Equal(t, []string{"forms.test", "other.test"}, sets[0].Domains)
	assert.Len(t, sets[0].Pages, 3)

	browsers := provider(t, siteHosts(srv, "forms.test", "other.test"))
	problems, err := Check(t.Context(), browsers, sets)
	require.NoError(t, err)
	assert.EqualValues(t, 1, browsers.opened.Load())
	require.Len(t, problems, 1, "%v", problems)
	assert.Equal(t, "other.test", hostname(problems[0].Page.URL))
	assert.True(t, strings.HasPrefix(problems[0].String(),
		"tool other (domains/other.test/tools/other.js) on http://other.test/ (intent other-one): did not register: the browser cannot compile the file: SyntaxError"),
		problems[0].String())

	// The same tool name in two domains: a browser each.
	twin := forms[0]
	twin.URLPatterns = []string{"http://other.test/*"}
	sets = ForPlan([]*runner.TrialIntent{tis[0], {Intent: intents.Intent{ID: "twin", Domain: "other.test",
		StartURL: "http://other.test/", EntryTool: twin.Name}, Tools: []intents.Tool{twin}}})
	assert.Len(t, sets, 2)
}

// TestForRegistryOnStubPages is `validate --browser` on the example
// registry and on a tool of an https site: every tool file on an example
// URL of each pattern, served by the stub under its CSP, over http and
// https.
func TestForRegistryOnStubPages(t *testing.T) {
	reg, err := intents.Load(filepath.Join("..", "..", "examples", "registry"))
	require.NoError(t, err)
	secure, err := intents.EvalTool(`({ name: "secure", description: "d", urlPatterns: ["https://*.shop.test/item/:id"], execute() { return {}; } })`, intents.ToolLimits{})
	require.NoError(t, err)
	secure.Path = "domains/shop.test/tools/secure.js"
	reg.Domains = append(reg.Domains, &intents.Domain{Name: "shop.test", Tools: []intents.Tool{secure}})

	sets, problems := ForRegistry(reg)
	require.Empty(t, problems)
	stub, err := StartStub()
	require.NoError(t, err)
	defer stub.Close()
	hosts := map[string]string{}
	for _, h := range Hosts(sets) {
		hosts[h] = stub.Addr()
	}
	assert.Equal(t, []string{"books.example", "weather.example", "x.shop.test"}, Hosts(sets))
	browsers := provider(t, hosts, "--ignore-certificate-errors")
	problems, err = Check(t.Context(), browsers, sets)
	require.NoError(t, err)
	assert.Empty(t, problems)
	assert.EqualValues(t, 1, browsers.opened.Load(), "the domains share a browser")
	var pages []string
	for _, s := range sets {
		for _, p := range s.Pages {
			pages = append(pages, p.URL+" "+p.For)
		}
	}
	assert.Contains(t, pages, "https://x.shop.test/item/x secure's pattern https://*.shop.test/item/:id")
	assert.Contains(t, pages, "http://books.example/book/ add_to_cart's pattern http://books.example/book/*",
		"tools the runs never register are checked too")
}

// TestFailuresOnLaterPagesAreKept: a tool that fails on a page the trial
// moves to, after the start page, is still in RegistrationFailures at the
// trial's end (the trial's row lists it), each tool, page and message once.
func TestFailuresOnLaterPagesAreKept(t *testing.T) {
	srv := formsSite(t)
	later, err := intents.EvalTool(`if (typeof document !== "undefined") null.x;
({ name: "later", description: "d", urlPatterns: ["http://forms.test/later/*"], execute() { return {}; } })`, intents.ToolLimits{})
	require.NoError(t, err)
	later.Path = "domains/forms.test/tools/later.js"
	b, err := provider(t, siteHosts(srv, "forms.test")).Open(t.Context(), runner.BrowserSpec{})
	require.NoError(t, err)
	defer b.Close(context.Background())
	require.NoError(t, b.RegisterTools(t.Context(), []intents.Tool{later}))

	for _, url := range []string{"http://forms.test/", "http://forms.test/later/1", "http://forms.test/later/1", "http://forms.test/"} {
		_, err := b.Load(t.Context(), url)
		require.NoError(t, err)
		_, err = b.LiveTools(t.Context()) // as the agent's listing does
		require.NoError(t, err)
	}
	failed, err := b.RegistrationFailures(t.Context())
	require.NoError(t, err)
	assert.Equal(t, []pairbench.RegistrationFailure{{Tool: "later", File: "domains/forms.test/tools/later.js", Line: 1,
		URL: "http://forms.test/later/1", Error: "TypeError: Cannot read properties of null (reading 'x')"}}, failed)
}
