package viewer_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/internal/offline"
	"github.com/pairbench/pairbench/internal/pagetest"
	"github.com/pairbench/pairbench/report"
	"github.com/pairbench/pairbench/rundir"
	"github.com/pairbench/pairbench/viewer"
)

// TestMain runs the tests in a network namespace of their own: they start
// Chromium, which must reach nothing.
func TestMain(m *testing.M) { offline.Main(m) }

// prWidth is how wide GitHub shows a pull request's conversation, and the
// width every page is checked at.
const prWidth = 1000

// shots is where the tests keep their screenshots for a person to look at:
// $PAIRBENCH_SCREENSHOTS, or a directory of the test's.
func shots(t *testing.T) string {
	t.Helper()
	if d := os.Getenv("PAIRBENCH_SCREENSHOTS"); d != "" {
		require.NoError(t, os.MkdirAll(d, 0o755))
		return d
	}
	return t.TempDir()
}

func fileURL(run rundir.RunDir, rel string) string {
	abs, err := filepath.Abs(run.File(rel))
	if err != nil {
		panic(err)
	}
	return "file://" + filepath.ToSlash(abs)
}

// visible counts the elements matching selector that are laid out.
func visible(p *pagetest.Page, selector string) int {
	return pagetest.Eval[int](p, `[...document.querySelectorAll(`+jsString(selector)+`)].filter(e => e.getClientRects().length > 0).length`)
}

func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestPagesFitAPullRequestsWidth opens the run page, an intent page and a
// pair page of runs of 3, 40 and 300 intents at 1,000 px: none scrolls
// sideways, and the run page's tables stay inside the window with every
// fold open. The screenshots are kept for a person to look at.
func TestPagesFitAPullRequestsWidth(t *testing.T) {
	b := pagetest.Start(t)
	out := shots(t)
	for _, c := range []struct{ intents, pairs int }{{3, 12}, {40, 6}, {300, 2}} {
		t.Run(fmt.Sprintf("%d intents", c.intents), func(t *testing.T) {
			run := fakeRun{intents: c.intents, pairs: c.pairs, trials: true}.write(t, t.TempDir())
			id := "books-intent-001-with-a-long-descriptive-name"
			for name, rel := range map[string]string{
				"run":    rundir.ReportHTML,
				"intent": viewer.IntentPage(id),
				"pair":   viewer.PairPage(id, 1),
			} {
				p := b.Open(t, fileURL(run, rel), prWidth)
				shot := filepath.Join(out, fmt.Sprintf("%s-%d-intents.png", name, c.intents))
				p.Screenshot(shot)
				t.Logf("screenshot: %s", shot)
				pagetest.Eval[bool](p, `(document.querySelectorAll('details').forEach(d => d.open = true), true)`)
				assert.False(t, p.ScrollsSideways(), "the %s page scrolls sideways at %d px", name, prWidth)
				for _, table := range []string{"table.summary", "svg"} {
					if visible(p, table) > 0 {
						right, viewport := p.Width(table)
						assert.LessOrEqual(t, right, viewport, "the %s page's %s is wider than the window", name, table)
					}
				}
			}
			p := b.Open(t, fileURL(run, viewer.PairPage(id, 1)), prWidth)
			assert.Equal(t, 2, visible(p, "section.arm"), "both arms")
			assert.Equal(t, 2, pagetest.Eval[int](p, `[...document.images].filter(i => i.complete && i.naturalWidth === 1280).length`),
				"both screenshots load, under the page's policy, from the run directory")
			left, right := pagetest.Eval[int](p, `Math.round(document.querySelectorAll('section.arm')[0].getBoundingClientRect().top)`),
				pagetest.Eval[int](p, `Math.round(document.querySelectorAll('section.arm')[1].getBoundingClientRect().top)`)
			assert.Equal(t, left, right, "the arms stand side by side")
		})
	}
}

// TestFiltersNeedNoScript: the run page's and an intent page's filters
// hide what they leave out, with the page's script-free CSS.
func TestFiltersNeedNoScript(t *testing.T) {
	b := pagetest.Start(t)
	run := fakeRun{intents: 40, pairs: 6, trials: true}.write(t, t.TempDir())
	rep, err := run.ReadReport()
	require.NoError(t, err)
	disagree, byLabel := 0, map[string]int{}
	for _, in := range rep.Intents {
		if in.Table.TreatmentOnly+in.Table.ControlOnly > 0 {
			disagree++
		}
		byLabel[string(in.Label)]++
	}
	require.Positive(t, disagree)
	require.Less(t, disagree, len(rep.Intents), "the filter must have something to hide")

	p := b.Open(t, fileURL(run, rundir.ReportHTML), prWidth)
	rows := "table.summary tr.f-row"
	assert.Equal(t, len(rep.Intents), visible(p, rows), "up to 40 intents, one table of them all")
	pagetest.Eval[bool](p, `(document.getElementById('fd').click(), true)`)
	assert.Equal(t, disagree, visible(p, rows), "only intents with a pair where the arms disagree, every fold opened")
	pagetest.Eval[bool](p, `(document.getElementById('fd').click(), true)`)
	for i, l := range rep.Intents[0:1] {
		id := fmt.Sprintf("fl-%d", l.Label.Rank())
		pagetest.Eval[bool](p, `(document.getElementById(`+jsString(id)+`).click(), true)`)
		assert.Equal(t, byLabel[string(l.Label)], visible(p, rows), "label filter %d (%s)", i, l.Label)
	}

	pagetest.Eval[bool](p, `(document.getElementById('fl-all').click(), true)`)
	withWrong := 0
	for _, in := range rep.Intents {
		if in.Control.Outcomes[pairbench.Wrong]+in.Treatment.Outcomes[pairbench.Wrong] > 0 {
			withWrong++
		}
	}
	require.Less(t, withWrong, len(rep.Intents), "the outcome filter must have something to hide")
	pagetest.Eval[bool](p, `(document.getElementById('fo-wrong').click(), true)`)
	assert.Equal(t, withWrong, visible(p, rows), "only intents with a wrong trial")

	ip := b.Open(t, fileURL(run, viewer.IntentPage(rep.Intents[0].ID)), prWidth)
	all := visible(ip, "table.summary tr.p-row")
	assert.Equal(t, 6, all)
	want := strings.Count(readFile(t, run.File(viewer.IntentPage(rep.Intents[0].ID))), `<tr class="p-row pc-control-only pd">`) +
		strings.Count(readFile(t, run.File(viewer.IntentPage(rep.Intents[0].ID))), `<tr class="p-row pc-treatment-only pd">`)
	pagetest.Eval[bool](ip, `(document.getElementById('pd').click(), true)`)
	assert.Equal(t, want, visible(ip, "table.summary tr.p-row"), "only the pairs where the arms disagree")
	assert.Equal(t, want, visible(ip, "svg a.p-row"), "the paired plot keeps their lines only")
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	return string(b)
}

// TestHostileTrialRunsNothing opens the pages of a hostile trial in
// Chromium: its markup shows as text, no script ran, the page is not
// restyled away, and nothing navigated.
func TestHostileTrialRunsNothing(t *testing.T) {
	b := pagetest.Start(t)
	run := fakeRun{intents: 1, pairs: 2, trials: true, hostile: true}.write(t, t.TempDir())
	for _, rel := range []string{rundir.ReportHTML, viewer.IntentPage("books-intent-000-with-a-long-descriptive-name"),
		viewer.PairPage("books-intent-000-with-a-long-descriptive-name", 0)} {
		url := fileURL(run, rel)
		p := b.Open(t, url, prWidth)
		assert.NotContains(t, pagetest.Eval[string](p, `document.title`), "pwned", rel)
		assert.Equal(t, url, pagetest.Eval[string](p, `location.href`), "%s did not navigate", rel)
		assert.Zero(t, pagetest.Eval[int](p, `document.scripts.length`), rel)
		assert.NotEqual(t, "none", pagetest.Eval[string](p, `getComputedStyle(document.body).display`), rel)
		assert.Equal(t, 1, pagetest.Eval[int](p, `document.styleSheets.length`), "%s has its own style sheet only", rel)
	}
	p := b.Open(t, fileURL(run, viewer.PairPage("books-intent-000-with-a-long-descriptive-name", 0)), prWidth)
	assert.Contains(t, pagetest.Eval[string](p, `document.body.innerText`), `<script>document.title="pwned"</script>`, "shown as text")
	assert.Equal(t, 2, pagetest.Eval[int](p, `document.images.length`), "the two screenshots, no image of the page's making")
	p.Screenshot(filepath.Join(shots(t), "pair-hostile.png"))
}

// TestCommentThroughGFM renders the PR comment (report.md) of runs of 3,
// 40 and 300 intents through cmark-gfm, GitHub's own Markdown renderer,
// and lays it out in Chromium at a pull request's width: it is within
// GitHub's 65,536 characters, the verdict line comes first, its one table
// has at most five columns and fits, and no commit SHA sits in a code
// span (which would keep GitHub from linking it).
func TestCommentThroughGFM(t *testing.T) {
	gfm, err := exec.LookPath("cmark-gfm")
	require.NoError(t, err, "cmark-gfm is not installed (scripts/setup.sh installs it)")
	b := pagetest.Start(t)
	out := shots(t)
	for _, n := range []int{3, 40, 300} {
		t.Run(fmt.Sprintf("%d intents", n), func(t *testing.T) {
			run := fakeRun{intents: n, pairs: 6}.write(t, t.TempDir())
			md := readFile(t, run.File(rundir.ReportMarkdown))
			assert.LessOrEqual(t, utf8.RuneCountInString(md), maxCommentChars, "GitHub refuses a comment longer than this")
			// GitHub keeps <details> and <summary> (the folds); cmark-gfm
			// does with --unsafe, its tag filter removing what GitHub does.
			rendered, err := exec.Command(gfm, "--extension", "table", "--extension", "autolink", "--extension", "strikethrough",
				"--extension", "tagfilter", "--unsafe", run.File(rundir.ReportMarkdown)).Output()
			require.NoError(t, err)
			page := filepath.Join(t.TempDir(), "comment.html")
			require.NoError(t, os.WriteFile(page, []byte(commentPage(string(rendered))), 0o644))

			p := b.Open(t, "file://"+page, prWidth)
			assert.True(t, strings.HasPrefix(md, "**pairbench verdict: "), "the verdict line comes first")
			assert.Equal(t, "P", pagetest.Eval[string](p, `document.querySelector('.comment').firstElementChild.tagName`))
			assert.LessOrEqual(t, pagetest.Eval[int](p, `document.querySelector('.comment > table').rows[0].cells.length`), 5, "at most five columns")
			assert.LessOrEqual(t, pagetest.Eval[int](p, `document.querySelector('.comment > table').rows.length`), 21, "the worst 20 first")
			right, viewport := p.Width(".comment > table")
			assert.LessOrEqual(t, right, viewport, "the table fits")
			assert.False(t, p.ScrollsSideways())
			assert.Zero(t, pagetest.Eval[int](p, `[...document.querySelectorAll('.comment > table tr')].filter(r => r.getBoundingClientRect().height > 2.2 * parseFloat(getComputedStyle(r).lineHeight)).length`),
				"no row of the first table wraps to more than two lines")
			assert.NotRegexp(t, regexp.MustCompile(`<code>[0-9a-f]{7,40}</code>`), string(rendered), "no SHA in a code span")
			shot := filepath.Join(out, fmt.Sprintf("comment-%d-intents.png", n))
			p.Screenshot(shot)
			t.Logf("screenshot: %s", shot)
		})
	}
}

// maxCommentChars is the longest comment body GitHub takes, in
// characters.
const maxCommentChars = 65536

// commentPage wraps rendered comment HTML the way GitHub lays a comment
// out: its body font and table style, in a column as wide as the window
// less the conversation's margins.
func commentPage(body string) string {
	return `<!DOCTYPE html><html><head><meta charset="utf-8"><style>
body { margin: 0; padding: 16px; font: 14px/1.5 -apple-system, "Segoe UI", "Noto Sans", Helvetica, Arial, sans-serif; }
.comment { max-width: 100%; box-sizing: border-box; padding: 16px; border: 1px solid #d0d7de; border-radius: 6px; overflow-wrap: break-word; }
table { border-collapse: collapse; display: block; width: max-content; max-width: 100%; overflow: auto; }
th, td { padding: 6px 13px; border: 1px solid #d0d7de; }
code { font: 85% ui-monospace, monospace; background: #eff1f3; padding: .2em .4em; border-radius: 6px; }
details { margin: 8px 0; }
</style></head><body><div class="comment">` + body + `</div></body></html>`
}

// TestStylesAreTheOnesThePoliciesAllow guards the hashes: each page's
// inline style sheet is exactly the one its policy allows.
func TestStylesAreTheOnesThePoliciesAllow(t *testing.T) {
	assert.Contains(t, viewer.Policy, report.StyleSource(viewer.Style))
	assert.Contains(t, report.HTMLPolicy, report.StyleSource(report.HTMLStyle))
	run := fakeRun{intents: 1, pairs: 1, trials: true}.write(t, t.TempDir())
	page := readFile(t, run.File(viewer.PairPage("books-intent-000-with-a-long-descriptive-name", 0)))
	m := regexp.MustCompile(`(?s)<style>(.*?)</style>`).FindStringSubmatch(page)
	require.Len(t, m, 2)
	assert.Equal(t, viewer.Style, m[1])
}
