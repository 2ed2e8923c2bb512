package viewer_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/html"

	"github.com/pairbench/pairbench/rundir"
	"github.com/pairbench/pairbench/viewer"
)

// sitePages lists every page of the site in run, report.html first.
func sitePages(t *testing.T, run rundir.RunDir) []string {
	t.Helper()
	pages := []string{rundir.ReportHTML}
	err := filepath.WalkDir(run.File(viewer.IntentsDir), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(run.Path, p)
			pages = append(pages, filepath.ToSlash(rel))
		}
		return err
	})
	require.NoError(t, err)
	return pages
}

func TestSiteHasAPagePerIntentAndPair(t *testing.T) {
	run := fakeRun{intents: 3, pairs: 4, trials: true}.write(t, t.TempDir())
	pages := sitePages(t, run)
	assert.Len(t, pages, 1+3+3*4, "the run page, a page per intent, a page per pair")
	report, err := os.ReadFile(run.File(rundir.ReportHTML))
	require.NoError(t, err)
	for i := range 3 {
		id := "books-intent-00" + string(rune('0'+i)) + "-with-a-long-descriptive-name"
		assert.Contains(t, string(report), `href="intents/`+id+`.html"`, "the run page links each intent's page")
		intent, err := os.ReadFile(run.File(viewer.IntentPage(id)))
		require.NoError(t, err)
		for p := range 4 {
			assert.Contains(t, string(intent), `href="`+id+`/`+string(rune('0'+p))+`.html"`, "the intent page links pair %d", p)
		}
		assert.Equal(t, 4, strings.Count(string(intent), `<line class="c-`), "the paired plot has a line per pair")
	}
	pair, err := os.ReadFile(run.File(viewer.PairPage("books-intent-001-with-a-long-descriptive-name", 2)))
	require.NoError(t, err)
	page := string(pair)
	for _, want := range []string{
		`<section class="arm">`, "control", "treatment", // both arms
		`src="../../trials/books-intent-001-with-a-long-descriptive-name/2-control/screenshot.png"`,
		`src="../../trials/books-intent-001-with-a-long-descriptive-name/2-treatment/screenshot.png"`,
		"What is the cheapest book by Ada Quill?",               // the task
		"call <code>mcp__pairbench__webmcp</code>",              // a tool call
		"&#34;action&#34;: &#34;list&#34;",                      // with its arguments
		"result of <code>mcp__browser__browser_snapshot</code>", // and a result
		"first model request", "start delay", // the timeline
		"<code>find_books</code>", // a WebMCP invocation
		"Paper Boats",             // the answer
	} {
		assert.Contains(t, page, want)
	}
	assert.Equal(t, 2, strings.Count(page, `<section class="arm">`))
}

// TestSiteShowsWebMCPImpl: each trial's page says whose WebMCP its start
// page had, each intent's figures count them per arm, and a run that mixed
// the browser's own WebMCP with the polyfill is flagged on the run page.
func TestSiteShowsWebMCPImpl(t *testing.T) {
	run := fakeRun{intents: 2, pairs: 2, trials: true, mixed: true}.write(t, t.TempDir())
	native, polyfill := "books-intent-000-with-a-long-descriptive-name", "books-intent-001-with-a-long-descriptive-name"
	assert.Equal(t, 2, strings.Count(readFile(t, run.File(viewer.PairPage(native, 1))), "<dt>WebMCP</dt><dd>the browser&#39;s own (native)</dd>"), "both arms")
	assert.Equal(t, 2, strings.Count(readFile(t, run.File(viewer.PairPage(polyfill, 0))), "<dt>WebMCP</dt><dd>pairbench&#39;s polyfill (the browser has none)</dd>"))
	assert.Contains(t, readFile(t, run.File(viewer.IntentPage(native))), "<tr><th>WebMCP of the start page</th><td>native 2</td><td>native 2</td></tr>")
	assert.Contains(t, readFile(t, run.File(viewer.IntentPage(polyfill))), "<tr><th>WebMCP of the start page</th><td>polyfill 2</td><td>polyfill 2</td></tr>")
	assert.Contains(t, readFile(t, run.File(rundir.ReportHTML)),
		`<p class="warning"><strong>Mixed WebMCP.</strong> 4 trials ran on the browser&#39;s own WebMCP and 4 on pairbench&#39;s polyfill (each intent&#39;s trials all on one).`)
	assert.Contains(t, readFile(t, run.File(rundir.ReportMarkdown)), "**Mixed WebMCP.**", "the PR comment flags it too")

	one := fakeRun{intents: 2, pairs: 2, trials: true}.write(t, t.TempDir())
	assert.NotContains(t, readFile(t, one.File(rundir.ReportHTML)), "Mixed WebMCP")
}

func TestSiteWithoutTrialsHasIntentPagesOnly(t *testing.T) {
	run := fakeRun{intents: 2, pairs: 3}.write(t, t.TempDir())
	assert.Len(t, sitePages(t, run), 1+2, "no trial directories, so no pair pages")
	intent, err := os.ReadFile(run.File(viewer.IntentPage("books-intent-000-with-a-long-descriptive-name")))
	require.NoError(t, err)
	assert.Contains(t, string(intent), "has no trial directories")
	assert.NotContains(t, string(intent), `.html">pair `)
}

// TestEveryPageHasTheOneHead: report.html and the intent and pair pages
// open with the same head (report's page.html.tmpl) and close alike; only
// the title, the policy and the style sheet it allows differ.
func TestEveryPageHasTheOneHead(t *testing.T) {
	run := fakeRun{intents: 2, pairs: 2, trials: true}.write(t, t.TempDir())
	varying := regexp.MustCompile(`(?s)<title>.*?</title>|content="default-src[^"]*"|<style>.*?</style>`)
	var first string
	for _, rel := range sitePages(t, run) {
		page := readFile(t, run.File(rel))
		head, _, found := strings.Cut(page, "<body>\n")
		require.True(t, found, "%s has a body", rel)
		head = varying.ReplaceAllString(head, "")
		if first == "" {
			first = head
		}
		assert.Equal(t, first, head, "%s opens as report.html does", rel)
		assert.Contains(t, page, "</body>\n</html>\n", "%s closes with the shared foot", rel)
	}
	assert.Contains(t, readFile(t, run.File(rundir.ReportHTML)), "<title>pairbench report viewer-test</title>")
	assert.Contains(t, readFile(t, run.File(viewer.IntentPage("books-intent-000-with-a-long-descriptive-name"))),
		"<title>books-intent-000-with-a-long-descriptive-name · pairbench viewer-test</title>")
}

// TestHostileTrialIsEscaped is the attack: every string a hostile page can
// steer into a trial (the answer, the grade, the error, tool names and
// results, the transcript) carries markup that would run script, restyle
// or navigate the page. No page of the site may contain an element or an
// attribute it did not put there itself.
func TestHostileTrialIsEscaped(t *testing.T) {
	run := fakeRun{intents: 2, pairs: 2, trials: true, hostile: true}.write(t, t.TempDir())
	for _, rel := range sitePages(t, run) {
		b, err := os.ReadFile(run.File(rel))
		require.NoError(t, err)
		checkInert(t, rel, b)
	}
	pair, err := os.ReadFile(run.File(viewer.PairPage("books-intent-000-with-a-long-descriptive-name", 1)))
	require.NoError(t, err)
	assert.Contains(t, string(pair), "&lt;script&gt;document.title=&#34;pwned&#34;&lt;/script&gt;", "the hostile text is shown, escaped")
	assert.Contains(t, string(pair), "more characters in the transcript file", "a long result is trimmed")
}

// checkInert fails unless page has no script, no event handler, no style
// but its own one, no refresh, no link or source that leaves the site or
// runs script, and carries the site's Content-Security-Policy.
func checkInert(t *testing.T, name string, page []byte) {
	t.Helper()
	doc, err := html.Parse(bytes.NewReader(page))
	require.NoError(t, err, name)
	styles, policies := 0, 0
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			switch n.Data {
			case "script", "iframe", "object", "embed", "base", "link", "form":
				if n.Data != "form" || attr(n, "action") != "" {
					t.Errorf("%s: a <%s> element", name, n.Data)
				}
			case "style":
				styles++
			case "meta":
				if strings.EqualFold(attr(n, "http-equiv"), "refresh") {
					t.Errorf("%s: a refresh <meta>", name)
				}
				if attr(n, "http-equiv") == "Content-Security-Policy" {
					policies++
					assert.Contains(t, attr(n, "content"), "default-src 'none'", name)
				}
			}
			for _, a := range n.Attr {
				k, v := strings.ToLower(a.Key), strings.ToLower(strings.TrimSpace(a.Val))
				if strings.HasPrefix(k, "on") || k == "style" || k == "srcdoc" {
					t.Errorf("%s: <%s %s=%q>", name, n.Data, a.Key, a.Val)
				}
				if (k == "href" || k == "src" || k == "xlink:href" || k == "action") &&
					(strings.Contains(v, ":") || strings.HasPrefix(v, "//")) {
					t.Errorf("%s: <%s %s=%q> leaves the site", name, n.Data, a.Key, a.Val)
				}
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	assert.Equal(t, 1, styles, "%s: one style sheet, the site's own", name)
	assert.Equal(t, 1, policies, "%s: carries its Content-Security-Policy", name)
	assert.NotRegexp(t, regexp.MustCompile(`(?i)<(script|img src=x|svg onload)`), string(page), name)
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if strings.EqualFold(a.Key, key) {
			return a.Val
		}
	}
	return ""
}

func TestHandlerServesTheSiteOnly(t *testing.T) {
	run := fakeRun{intents: 1, pairs: 2, trials: true, hostile: true}.write(t, t.TempDir())
	require.NoError(t, os.WriteFile(run.File("secret.txt"), []byte("not for the site"), 0o644))
	require.NoError(t, os.Symlink("/etc/passwd", run.File("trials/books-intent-000-with-a-long-descriptive-name/0-control/link.json")))
	require.NoError(t, os.WriteFile(run.File("trials/books-intent-000-with-a-long-descriptive-name/0-control/evil.html"), []byte("<script>x</script>"), 0o644))
	h, err := viewer.Handler(run.Path)
	require.NoError(t, err)
	get := func(p string) *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, p, nil))
		return w
	}
	w := get("/")
	assert.Equal(t, http.StatusFound, w.Code)
	assert.Equal(t, "/report.html", w.Header().Get("Location"))

	for p, policy := range map[string]string{
		"/report.html": "style-src 'sha256-",
		"/intents/books-intent-000-with-a-long-descriptive-name.html":   viewer.Policy,
		"/intents/books-intent-000-with-a-long-descriptive-name/1.html": viewer.Policy,
	} {
		w := get(p)
		require.Equal(t, http.StatusOK, w.Code, p)
		assert.Contains(t, w.Header().Get("Content-Security-Policy"), policy, p)
		assert.Contains(t, w.Header().Get("Content-Security-Policy"), "frame-ancestors 'none'", p)
		assert.Equal(t, "nosniff", w.Header().Get("X-Content-Type-Options"), p)
		assert.Equal(t, "text/html; charset=utf-8", w.Header().Get("Content-Type"), p)
	}
	trial := "/trials/books-intent-000-with-a-long-descriptive-name/0-control/"
	for name, typ := range map[string]string{"screenshot.png": "image/png", "transcript.jsonl": "text/plain; charset=utf-8", "timeline.json": "application/json"} {
		w := get(trial + name)
		require.Equal(t, http.StatusOK, w.Code, name)
		assert.Equal(t, typ, w.Header().Get("Content-Type"), name)
		assert.Contains(t, w.Header().Get("Content-Security-Policy"), "sandbox", "a trial file is inert: %s", name)
	}
	for _, p := range []string{"/secret.txt", "/run.json", "/rows.jsonl", "/../../../etc/passwd", trial + "link.json", trial + "evil.html", trial, "/intents/"} {
		assert.Equal(t, http.StatusNotFound, get(p).Code, "%s is not part of the site", p)
	}
	w = httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/report.html", nil))
	assert.Equal(t, http.StatusMethodNotAllowed, w.Code)

	_, err = viewer.Handler(t.TempDir())
	assert.ErrorContains(t, err, "run pairbench report on it first")
}

// TestSiteNamesTheArms: a run of a pull request's tools against main's
// names the arms on every pair page, intent page and the run page.
func TestSiteNamesTheArms(t *testing.T) {
	run := fakeRun{intents: 1, pairs: 2, trials: true, against: true}.write(t, t.TempDir())
	page := readFile(t, run.File(viewer.PairPage("books-intent-000-with-a-long-descriptive-name", 1)))
	assert.Contains(t, page, "<h2>control: main@1a2b3c4&#39;s tools")
	assert.Contains(t, page, "<h2>treatment: the registry&#39;s tools")
	assert.Contains(t, page, "control had main@1a2b3c4&#39;s tools; treatment had the registry&#39;s tools.")
	assert.Contains(t, readFile(t, run.File(rundir.ReportHTML)), "<strong>Compared:</strong> the registry&#39;s tools (treatment, <code>tools</code>) against main@1a2b3c4&#39;s tools")
	intent := readFile(t, run.File(viewer.IntentPage("books-intent-000-with-a-long-descriptive-name")))
	assert.Contains(t, intent, "<p>Compared: treatment had the registry&#39;s tools; control had main@1a2b3c4&#39;s tools.</p>")
	assert.Contains(t, intent, "<th>control: main@1a2b3c4&#39;s tools</th><th>treatment: the registry&#39;s tools</th>")

	plainRun := fakeRun{intents: 1, pairs: 2, trials: true}.write(t, t.TempDir())
	plain := readFile(t, plainRun.File(viewer.PairPage("books-intent-000-with-a-long-descriptive-name", 1)))
	assert.Contains(t, plain, "treatment had the site's WebMCP tools registered")
	plainIntent := readFile(t, plainRun.File(viewer.IntentPage("books-intent-000-with-a-long-descriptive-name")))
	assert.Contains(t, plainIntent, "<th>control</th><th>treatment</th>")
	assert.NotContains(t, plainIntent, "Compared:")
}
