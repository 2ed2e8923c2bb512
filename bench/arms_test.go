package bench_test

import (
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pairbench/pairbench/rundir"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/bench"
	"github.com/pairbench/pairbench/intents"
	"github.com/pairbench/pairbench/intents/config"
	"github.com/pairbench/pairbench/internal/realstack"
	"github.com/pairbench/pairbench/report"
)

// The arms' proof: a test registry in a real git repository, with a main
// branch and a pull request's branch, benched through the real stack
// (local Chromium, the sandbox, pi, the scripted model) against a site of
// the test's own. Every effect is made real and deterministic by what the
// tools and pages do: a delay in a tool, a tool that reads a misspelt query
// parameter, a page that does not show the answer, a slow route through
// the pages and a context pack that names the short one.

// armsTitles are the answer every intent looks for.
var armsTitles = []string{"Amber Road", "Blue Harbour", "Copper Sky"}

// armsSite serves every test domain: the API the tools call, the pages the
// agent can read, each page after pageDelay. On broken.test the pages never
// show the answer (only the API does).
func armsSite(pageDelay time.Duration) http.Handler {
	list := func(w http.ResponseWriter, titles []string) {
		var b strings.Builder
		b.WriteString("<!doctype html><title>Celia Marsh</title><h1>Books by Celia Marsh</h1><ul>")
		for _, t := range titles {
			fmt.Fprintf(&b, "<li>%s</li>", html.EscapeString(t))
		}
		b.WriteString("</ul>")
		fmt.Fprint(w, b.String())
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, _, _ := strings.Cut(r.Host, ":")
		if r.URL.Path == "/api/books" {
			w.Header().Set("Content-Type", "application/json")
			books := []map[string]string{}
			if r.URL.Query().Get("author") == "Celia Marsh" { // any other parameter finds nothing
				for _, t := range armsTitles {
					books = append(books, map[string]string{"title": t})
				}
			}
			_ = json.NewEncoder(w).Encode(map[string]any{"books": books})
			return
		}
		time.Sleep(pageDelay)
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		switch {
		case r.URL.Path == "/":
			if host == "broken.test" {
				fmt.Fprint(w, "<!doctype html><title>Shop</title><h1>Our shop</h1><p>Ask the shop's tools about its books.</p>")
				return
			}
			fmt.Fprint(w, `<!doctype html><title>Shop</title><h1>Our shop</h1><a href="/catalogue">Catalogue</a>`)
		case r.URL.Path == "/catalogue":
			fmt.Fprint(w, `<!doctype html><title>Catalogue</title><h1>Catalogue</h1><a href="/author">Celia Marsh</a>`)
		case r.URL.Path == "/author":
			fmt.Fprint(w, `<!doctype html><title>Celia Marsh</title><h1>Celia Marsh</h1><a href="/author/all">Every book</a>`)
		case r.URL.Path == "/author/all" && host != "broken.test":
			list(w, armsTitles)
		default:
			http.NotFound(w, r)
		}
	})
}

// armsTool is a find_books tool file; body is what execute does with the
// response r of its fetch.
func armsTool(domain, fetch, extra string) string {
	return fmt.Sprintf(`({
  name: "find_books",
  description: "Lists every book in the catalogue by one author, with its title.",
  inputSchema: {
    type: "object",
    properties: { author: { type: "string", description: "The author's full name." } },
    required: ["author"],
    additionalProperties: false
  },
  annotations: { readOnlyHint: true },
  urlPatterns: ["http://%s/*"],
  async execute(input) {%s
    const r = await fetch(%s);
    return await r.json();
  }
})
`, domain, extra, fetch)
}

const armsFetch = `"/api/books?author=" + encodeURIComponent(input.author)`

// armsIntent is domain's intent: the titles by Celia Marsh. Its baseline
// route through the pages goes home, to the catalogue, to the author and
// to the page of every book.
func armsIntent(domain string) string {
	steps := fmt.Sprintf(`    - tool: browser_navigate
      args: {url: "http://%[1]s/"}
    - tool: browser_click
      args: {element: Catalogue}
    - tool: browser_click
      args: {element: Celia Marsh}
    - tool: browser_navigate
      args: {url: "http://%[1]s/author/all"}`, domain)
	if domain == "broken.test" {
		steps = "    - tool: browser_snapshot"
	}
	return fmt.Sprintf(`id: %[1]s-titles
domain: %[1]s
start_url: http://%[1]s/
prompt: Which books by Celia Marsh does the %[1]s shop list? Answer with every title.
entry_tool: find_books
answer:
  type: object
  properties:
    titles: {type: array, items: {type: string}}
  required: [titles]
class: pinned
rules:
  - rule: set_equals
    field: titles
    values: ["Amber Road", "Blue Harbour", "Copper Sky"]
baseline:
  tool_args: {author: Celia Marsh}
  steps:
%[2]s
  answer:
    titles: ["Amber Road", "Blue Harbour", "Copper Sky"]
`, domain, steps)
}

// armsRepo makes the test registry's repository: main holds slow.test,
// broken.test, refactor.test, calm.test, route.test (whose context pack
// names the page of every book) and empty.test (whose pack is empty); the
// checked-out branch pr makes slow.test's tool wait, breaks broken.test's
// (a misspelt query parameter), refactors refactor.test's and adds
// fresh.test. It returns the registry directory and main's commit.
func armsRepo(t *testing.T) (string, string) {
	t.Helper()
	repo := t.TempDir()
	git := func(args ...string) string {
		cmd := exec.Command("git", append([]string{"-C", repo}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
			"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com", "GIT_CONFIG_GLOBAL=/dev/null")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "git %v: %s", args, out)
		return strings.TrimSpace(string(out))
	}
	reg := filepath.Join(repo, "registry")
	write := func(rel, body string) {
		p := filepath.Join(reg, filepath.FromSlash(rel))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
	}
	domain := func(d, tool, context string) {
		dj := fmt.Sprintf(`{"start_urls": ["http://%s/*"]}`, d)
		if context != "" {
			dj = fmt.Sprintf(`{"start_urls": ["http://%s/*"], "context": "context.md"}`, d)
			write("domains/"+d+"/context.md", strings.TrimPrefix(context, "-"))
		}
		write("domains/"+d+"/domain.json", dj)
		write("domains/"+d+"/tools/find_books.js", tool)
		write("bench/intents/"+d+"/"+d+"-titles.yaml", armsIntent(d))
	}
	write(".pairbench.yml", "margins:\n  accuracy_points: 30\n  slower_percent: 100\n")
	for _, d := range []string{"slow.test", "broken.test", "refactor.test", "calm.test"} {
		domain(d, armsTool(d, armsFetch, ""), "")
	}
	domain("route.test", armsTool("route.test", armsFetch, ""), "Every book by an author is listed on one page: http://route.test/author/all\n")
	domain("empty.test", armsTool("empty.test", armsFetch, ""), "-") // an empty pack
	git("init", "--quiet", "-b", "main")
	git("add", ".")
	git("commit", "--quiet", "-m", "main")
	mainCommit := git("rev-parse", "HEAD")

	git("checkout", "--quiet", "-b", "pr")
	write("domains/slow.test/tools/find_books.js", armsTool("slow.test", armsFetch, "\n    await new Promise((done) => setTimeout(done, 6000));"))
	write("domains/broken.test/tools/find_books.js", armsTool("broken.test", `"/api/books?athor=" + encodeURIComponent(input.author)`, ""))
	write("domains/refactor.test/tools/find_books.js", "function booksURL(author) {\n  return \"/api/books?author=\" + encodeURIComponent(author);\n}\n\n"+
		armsTool("refactor.test", "booksURL(input.author)", ""))
	domain("fresh.test", armsTool("fresh.test", armsFetch, ""), "")
	git("add", ".")
	git("commit", "--quiet", "-m", "pr")
	return reg, mainCommit
}

// armsBench runs a bench of reg's intents with arms, pairs pairs each, and
// returns its report.
func armsBench(t *testing.T, reg string, hosts map[string]string, arms rundir.PlanArms, pairs int, alpha float64, sel ...string) *report.Report {
	t.Helper()
	cfg := benchConfig(t, reg)
	cfg.RunID = strings.NewReplacer("@", "-", "+", "-").Replace(arms.Control.String() + "-vs-" + arms.Treatment.String())
	cfg.Intents, cfg.Pairs, cfg.Slots, cfg.Alpha, cfg.Hosts, cfg.Arms = sel, pairs, 2, alpha, hosts, arms
	cfg.Caps.TimeS = 300
	res, err := bench.Bench(t.Context(), cfg)
	require.NoError(t, err)
	var rep report.Report
	b, err := os.ReadFile(res.Dir.File("report.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &rep))
	for _, in := range rep.Intents {
		t.Logf("%s vs %s: %s: %s (%s); control %d/%d correct, treatment %d/%d; speed %+v", arms.Treatment, arms.Control, in.ID, in.Label, in.Why,
			in.Control.Correct, in.Control.N, in.Treatment.Correct, in.Treatment.N, in.Speed)
		if ni := in.NonInferiority; ni != nil {
			t.Logf("  non-inferiority: %s (%s)", ni.Result, ni.Why)
		}
	}
	return &rep
}

func intentOf(t *testing.T, rep *report.Report, id string) report.Intent {
	t.Helper()
	for _, in := range rep.Intents {
		if in.ID == id {
			return in
		}
	}
	t.Fatalf("no intent %s in the report", id)
	return report.Intent{}
}

// TestArmsThroughTheRealStack is the proof, bench by bench.
func TestArmsThroughTheRealStack(t *testing.T) {
	realstack.Need(t)
	reg, mainCommit := armsRepo(t)
	srv := httptest.NewServer(armsSite(2 * time.Second))
	defer srv.Close()
	hosts := map[string]string{}
	for _, d := range []string{"slow.test", "broken.test", "refactor.test", "calm.test", "fresh.test", "route.test", "empty.test"} {
		hosts[d] = strings.TrimPrefix(srv.URL, "http://")
	}
	against := rundir.PlanArms{Control: rundir.ArmSpec{Tools: rundir.RevTools, Rev: "main"}, Treatment: rundir.ArmSpec{Tools: rundir.RegistryTools}}

	// The pull request's diff chooses what is benched, and against what.
	head, err := intents.Load(reg)
	require.NoError(t, err)
	out, err := exec.Command("git", "-C", reg, "diff", "--name-only", "--relative", "main", "--", ".").Output()
	require.NoError(t, err)
	base := map[string]bool{"slow.test": true, "broken.test": true, "refactor.test": true, "calm.test": true, "route.test": true, "empty.test": true}
	cmp := config.Comparisons(head.Config, strings.Fields(string(out)), func(d string) bool { return base[d] })
	chosen := map[string][]config.Against{}
	for _, c := range cmp {
		chosen[c.Domain] = c.Against
	}
	assert.Equal(t, map[string][]config.Against{
		"broken.test": {config.AgainstBase}, "refactor.test": {config.AgainstBase}, "slow.test": {config.AgainstBase},
		"fresh.test": {config.AgainstNone},
	}, chosen, "calm.test, route.test and empty.test are untouched: not benched")

	t.Run("a broken tool is less accurate and worse against base; a new domain is benched against none", func(t *testing.T) {
		rep := armsBench(t, reg, hosts, against, 10, 0.05, "broken.test", "fresh.test")
		require.NotNil(t, rep.Arms)
		assert.Equal(t, "main@"+mainCommit[:7]+"'s tools", rep.Arms.Control.Name)
		broken := intentOf(t, rep, "broken.test-titles")
		assert.Equal(t, pairbench.LessAccurate, broken.Label, broken.Why)
		require.NotNil(t, broken.NonInferiority)
		assert.Equal(t, report.Worse, broken.NonInferiority.Result, broken.NonInferiority.Why)
		assert.Equal(t, report.Worse, rep.NonInferiority)
		fresh := intentOf(t, rep, "fresh.test-titles")
		assert.Nil(t, fresh.NonInferiority, "a new domain has no base to be worse than")
		var domains []string
		for _, d := range rep.Arms.Domains {
			domains = append(domains, d.Domain)
			switch d.Domain {
			case "fresh.test":
				assert.True(t, d.AbsentInControl, "the report says the domain is new")
			case "broken.test":
				assert.Equal(t, []string{"find_books"}, d.Edited)
			}
		}
		assert.Equal(t, []string{"broken.test", "fresh.test"}, domains)
		for _, tf := range rep.Tools {
			if tf.Domain == "broken.test" && tf.Tool == "find_books" {
				require.NotNil(t, tf.PerArm)
				assert.Positive(t, tf.PerArm.Control.Calls, "base's tool was called in control")
				assert.Positive(t, tf.PerArm.Treatment.Calls, "head's tool was called in treatment")
			}
		}
	})
	t.Run("a pure refactor is not worse", func(t *testing.T) {
		rep := armsBench(t, reg, hosts, against, 10, 0.05, "refactor.test")
		in := intentOf(t, rep, "refactor.test-titles")
		require.NotNil(t, in.NonInferiority)
		assert.Equal(t, report.NotWorse, in.NonInferiority.Result, in.NonInferiority.Why)
		assert.Equal(t, in.Control.Correct, in.Treatment.Correct, "the same answers")
	})
	t.Run("a delay in a tool is slower against base and still faster against none", func(t *testing.T) {
		// Eight pairs: a loaded machine's noise may turn one pair round.
		rep := armsBench(t, reg, hosts, against, 8, 0.05, "slow.test")
		in := intentOf(t, rep, "slow.test-titles")
		assert.Equal(t, pairbench.Slower, in.Label, in.Why)
		rep = armsBench(t, reg, hosts, rundir.DefaultArms, 6, 0.05, "slow.test")
		assert.Nil(t, rep.Arms, "none against tools is today's run")
		in = intentOf(t, rep, "slow.test-titles")
		assert.Equal(t, pairbench.Faster, in.Label, in.Why)
	})
	t.Run("a context pack that carries the route helps; an empty one does not", func(t *testing.T) {
		context := rundir.PlanArms{Control: rundir.ArmSpec{Tools: rundir.NoTools}, Treatment: rundir.ArmSpec{Tools: rundir.NoTools, Context: true}}
		rep := armsBench(t, reg, hosts, context, 6, 0.05, "route.test")
		in := intentOf(t, rep, "route.test-titles")
		assert.Equal(t, pairbench.Faster, in.Label, in.Why)
		assert.Equal(t, 6, in.Treatment.Correct)
		rep = armsBench(t, reg, hosts, context, 8, 0.01, "empty.test")
		in = intentOf(t, rep, "empty.test-titles")
		assert.Contains(t, []pairbench.Label{pairbench.NoSignal, pairbench.Inconclusive}, in.Label, in.Why)
	})
}
