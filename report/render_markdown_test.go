package report

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench"
)

const fixtureURL = "https://artifacts.example/runs/demo-2026-11-29/report.html"

func TestMarkdownGolden(t *testing.T) {
	var buf bytes.Buffer
	require.NoError(t, WriteMarkdown(&buf, fixtureReport(), MarkdownOptions{FullReportURL: fixtureURL}))
	assertGolden(t, "report.md", buf.Bytes())
}

func TestMarkdownVerdictLine(t *testing.T) {
	r := fixtureReport()
	md := Markdown(r, MarkdownOptions{})
	first, _, _ := strings.Cut(md, "\n")
	assert.Equal(t, "**pairbench verdict: less accurate** (pooled over 9 intents; per intent: 1 less accurate, 1 slower, 1 mixed, 1 no adoption, 1 no signal, 2 inconclusive, 1 faster, 1 more accurate, 1 better) · **scripted model, not an LLM**", first)
	assert.Contains(t, md, "> [!WARNING]\n> These results come from a scripted model")

	r.Model = Model{Name: "openai/gpt-6-luna"}
	r.Verdict, r.Headline = "", nil
	md = Markdown(r, MarkdownOptions{})
	first, _, _ = strings.Cut(md, "\n")
	assert.True(t, strings.HasPrefix(first, "**pairbench verdict: less accurate** (worst of 10 intents"), "the verdict falls back to the worst label: %q", first)
	assert.NotContains(t, md, "scripted", "a real model is not called scripted")

	md = Markdown(&Report{V: ReportVersion, RunID: "empty"}, MarkdownOptions{})
	assert.True(t, strings.HasPrefix(md, "**pairbench verdict: none**: no intents in this run\n"), md)
}

// TestMarkdownFirstScreen: the verdict line, then one five-column table,
// worst label first; every other figure is folded, and there is no chart.
func TestMarkdownFirstScreen(t *testing.T) {
	md := Markdown(fixtureReport(), MarkdownOptions{FullReportURL: fixtureURL})
	lines := strings.Split(md, "\n")
	require.True(t, strings.HasPrefix(lines[0], "**pairbench verdict: less accurate** (pooled over 9 intents; per intent: "), lines[0])
	assert.Equal(t, "", lines[1])
	assert.True(t, strings.HasPrefix(lines[2], "**Harness suspect:** the placebo intent"), "a suspect harness is said right under the verdict: %s", lines[2])
	assert.True(t, strings.HasPrefix(lines[4], "Across the intents treatment was significantly less accurate"), "then what the verdict rests on: %s", lines[4])
	assert.True(t, strings.HasPrefix(lines[6], "Per intent, beyond the run's verdict: books-slower: slower"), lines[6])
	table := slices.Index(lines, "| intent | label | Δ accuracy | speedup | pairs |")
	require.Equal(t, 8, table, "then the table")
	assert.Equal(t, "|---|---|--:|--:|--:|", lines[table+1])
	var labels []pairbench.Label
	placebos := 0
	for _, line := range lines[table+2:] {
		if !strings.HasPrefix(line, "| ") {
			break
		}
		cells := strings.Split(strings.ReplaceAll(line, `\|`, ""), " | ")
		require.Len(t, cells, 5, "five columns: %s", line)
		if label, ok := strings.CutSuffix(cells[1], " (placebo)"); ok {
			placebos++
			assert.Equal(t, pairbench.NoAdoption, pairbench.Label(strings.Trim(label, "*")))
			continue
		}
		require.Zero(t, placebos, "the placebo intent is listed last, marked: %s", line)
		labels = append(labels, pairbench.Label(strings.Trim(cells[1], "*")))
	}
	require.Len(t, labels, 9, "one row per intent")
	require.Equal(t, 1, placebos, "and one for the placebo")
	assert.True(t, slices.IsSortedFunc(labels, func(a, b pairbench.Label) int { return a.Rank() - b.Rank() }), "worst first: %v", labels)
	assert.Contains(t, md, "| `books-less` | **less accurate** | −58 pp | 1.05× | 24 |")
	assert.Contains(t, md, "| `weather-few` | **inconclusive** | 0 pp | 1.90× | 3/6 |", "pairs: complete of planned when they differ")

	figures := strings.Index(md, "<details><summary>Every figure")
	require.Positive(t, figures, "the wide table is folded")
	assert.Greater(t, strings.Index(md, "conditional on both arms succeeding"), figures, "the notes are folded with the figures")
	assert.Less(t, strings.Index(md, "[full report](<"+fixtureURL+">)"), figures, "the report is linked on the first screen")
	assert.NotContains(t, md, "mermaid", "no chart: none stays readable at 40 intents")
	assert.NotContains(t, md, "### ", "no heading: everything past the first table is folded")
	assert.Contains(t, md, "<details><summary>Run checks</summary>")
}

// TestMarkdownFoldsPastTheFirstScreen: past firstScreen intents the first
// table keeps the worst ones and the rest are folded, still worst first.
func TestMarkdownFoldsPastTheFirstScreen(t *testing.T) {
	r := bigReport(300)
	md := Markdown(r, MarkdownOptions{FullReportURL: fixtureURL})
	require.LessOrEqual(t, len(md), MarkdownLimit)
	first, _, ok := strings.Cut(md, "<details>")
	require.True(t, ok)
	assert.Equal(t, firstScreen, strings.Count(first, "| `intent-"), "the first screen lists the worst %d", firstScreen)
	assert.Contains(t, first, "_280 more intents below (10 less accurate, 30 slower, 30 mixed, ")
	assert.Contains(t, md, "<details><summary>The other 280 intents, worst first</summary>")
	assert.Equal(t, 300, strings.Count(md, "…` | **"), "each intent once in the narrow tables, its id clipped")
}

// TestIncompleteRunSaysSoFirst renders the report of a run with pairs still
// to run, resumed once past a plan change: every rendering's first line
// says it is incomplete and no verdict, and names the forced change.
func TestIncompleteRunSaysSoFirst(t *testing.T) {
	r := fixtureReport()
	r.Incomplete = &Incomplete{Pending: 6, Planned: 12, Why: "shard 2 of 2 has no rows"}
	r.Forced = []string{"caps: {300 40 1} → {300 7 1}"}
	assert.False(t, r.Final())

	md := Markdown(r, MarkdownOptions{})
	first, _, _ := strings.Cut(md, "\n")
	assert.Equal(t, "**pairbench: incomplete run, no verdict**: 6 of 12 planned pairs not run yet (shard 2 of 2 has no rows); so far worst of 10 intents: 1 less accurate, 1 slower, 1 mixed, 1 no adoption, 1 no signal, 2 inconclusive, 1 faster, 1 more accurate, 1 better · **scripted model, not an LLM**", first)
	assert.NotContains(t, first, "pairbench verdict:")
	assert.Contains(t, md, "> [!WARNING]\n> This run is not finished")
	assert.Contains(t, md, "> [!CAUTION]\n> This run was resumed with --force past changes to its plan")
	assert.Contains(t, md, "> - caps: {300 40 1} → {300 7 1}")

	var html bytes.Buffer
	require.NoError(t, WriteHTML(&html, r, HTMLOptions{}))
	h1 := html.String()[strings.Index(html.String(), "<h1>"):]
	h1 = h1[:strings.Index(h1, "</h1>")]
	assert.Equal(t, "<h1>pairbench: incomplete run, no verdict: 6 of 12 planned pairs not run yet (shard 2 of 2 has no rows)", h1)
	assert.Contains(t, html.String(), "Forced resume.")

	var js bytes.Buffer
	require.NoError(t, WriteJSON(&js, r))
	back, err := ReadJSON(&js)
	require.NoError(t, err)
	assert.Equal(t, r.Incomplete, back.Incomplete, "report.json carries it")
	assert.False(t, back.Final())
	assert.True(t, fixtureReport().Final())
}

func TestMarkdownEscapesUntrustedText(t *testing.T) {
	md := Markdown(fixtureReport(), MarkdownOptions{})
	// The hostile intent name is a code span in the table (pipes escaped)
	// and HTML-escaped inside the details summary.
	assert.Contains(t, md, "| `` <img src=x onerror=alert(1)>\\|`@octocat` `` |")
	assert.Contains(t, md, "<summary><code>&lt;img src=x onerror=alert(1)&gt;|`@octocat`</code> · inconclusive</summary>")
	// Tool errors are code spans with their line breaks removed.
	assert.Contains(t, md, "`` <script>alert('x')</script> \\| `rm -rf` `` ×2; `author not found` ×1")
	assert.Equal(t, 1, strings.Count(md, "<script>"), "the script tag appears only in its code span")
	assert.Equal(t, 2, strings.Count(md, "<img"), "the img tag appears only in its code spans, in the narrow and the figures table")
	assert.Equal(t, 2, strings.Count(md, "| `` <img src=x onerror=alert(1)>\\|`@octocat` `` |"))
}

func TestMdText(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain words 7/10 [40–89%]", "plain words 7/10 [40–89%]"},
		{"a|b", `a\|b`},
		{"*bold* _it_ ~~s~~", `\*bold\* \_it\_ \~\~s\~\~`},
		{"<b>x</b> & y", `\<b\>x\</b\> &amp; y`},
		{"[click](javascript:x) ![i](u) [a][b]", `[click]\(javascript:x) ![i]\(u) [a]\[b]`},
		{"cost $0.01 to $0.02", `cost \$0.01 to \$0.02`},
		{"ping @octocat", "ping @\u2060octocat"},
		{"line\r\nbreak\nhere", "line break here"},
		{`back\slash`, `back\\slash`},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, mdText(tt.in), "mdText(%q)", tt.in)
	}
}

func TestMdCode(t *testing.T) {
	tests := []struct {
		in      string
		inTable bool
		want    string
	}{
		{"find_books", false, "`find_books`"},
		{"a`b", false, "``a`b``"},
		{"`x`", false, "`` `x` ``"},
		{"a|b", true, "`a\\|b`"},
		{"a|b", false, "`a|b`"},
		{"two\nlines", false, "`two lines`"},
		{"", false, "—"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, mdCode(tt.in, tt.inTable), "mdCode(%q, %v)", tt.in, tt.inTable)
	}
}

func TestMdLinkEncodesAngleBrackets(t *testing.T) {
	assert.Equal(t, "[full report](<https://x.example/a%3Cb%3E c>)", mdLink("https://x.example/a<b> c"))
	assert.Equal(t, "", mdLink(""))
}

// bigReport is a report with n intents whose every part is long.
func bigReport(n int) *Report {
	r := fixtureReport()
	r.Headline = nil // a report without a run-level verdict: the worst label
	base := r.Intents
	r.Intents = nil
	for i := range n {
		in := base[i%len(base)]
		in.ID = fmt.Sprintf("intent-%05d-%s", i, strings.Repeat("x", 40))
		in.Tools = []string{strings.Repeat("tool", 30)}
		r.Intents = append(r.Intents, in)
	}
	for i := range n {
		r.Tools = append(r.Tools, ToolFailures{Domain: "d.example", Tool: fmt.Sprintf("tool_%d", i), Calls: 9, Failures: 3,
			Errors: []ErrorCount{{Error: strings.Repeat("error text ", 100), Count: 3}}})
	}
	r.Verdict = pairbench.LessAccurate
	return r
}

func TestMarkdownCapTrimsDetailsFirst(t *testing.T) {
	r := bigReport(60)
	full := Markdown(r, MarkdownOptions{Limit: math.MaxInt32}) // the limit is clamped to MarkdownLimit
	require.LessOrEqual(t, len(full), MarkdownLimit)

	md := Markdown(r, MarkdownOptions{FullReportURL: fixtureURL})
	require.LessOrEqual(t, len(md), MarkdownLimit)
	assert.True(t, strings.HasPrefix(md, "**pairbench verdict: less accurate** (worst of 60 intents"), "verdict line first")
	for _, in := range r.Intents {
		assert.Contains(t, md, "| `"+in.ID+"` |", "every narrow row is kept")
	}
	assert.Less(t, strings.Count(md, "<details><summary><code>"), 60, "some details are trimmed")
	assert.Regexp(t, `_\d+ sections did not fit in this comment; see the \[full report\]\(<`+fixtureURL+`>\)\._`, md)
	assert.Contains(t, md, "<details><summary>Run checks</summary>", "the footer is kept")
	assert.Contains(t, md, "conditional on both arms succeeding")
}

func TestMarkdownCapHugeReport(t *testing.T) {
	r := bigReport(5000)
	md := Markdown(r, MarkdownOptions{FullReportURL: fixtureURL})
	assert.LessOrEqual(t, len(md), MarkdownLimit)
	assert.LessOrEqual(t, utf8.RuneCountInString(md), 60_000)
	assert.True(t, utf8.ValidString(md))
	assert.True(t, strings.HasPrefix(md, "**pairbench verdict: less accurate** (worst of 5000 intents"), "verdict line first")
	assert.Contains(t, md, "| `intent-00000-", "the first rows are kept")
	assert.Regexp(t, `_\d+ more rows did not fit in this comment; see the \[full report\]`, md)
	assert.NotContains(t, md, "<details><summary><code>", "no details when not even the narrow rows fit")
	assert.Contains(t, md, "<details><summary>Run checks</summary>")
}

func TestMarkdownCapPathological(t *testing.T) {
	r := fixtureReport()
	r.RunID = strings.Repeat("é", 100_000) // every mandatory part huge
	r.Run.ShapeOnly = []string{strings.Repeat("s", 100_000)}
	md := Markdown(r, MarkdownOptions{FullReportURL: fixtureURL})
	assert.LessOrEqual(t, len(md), MarkdownLimit)
	assert.True(t, utf8.ValidString(md))
	assert.True(t, strings.HasPrefix(md, "**pairbench verdict: less accurate**"))

	md = Markdown(r, MarkdownOptions{Limit: 100})
	assert.LessOrEqual(t, len(md), 100)
	assert.True(t, utf8.ValidString(md))
}

func BenchmarkMarkdownHuge(b *testing.B) {
	r := bigReport(5000)
	for b.Loop() {
		Markdown(r, MarkdownOptions{})
	}
}

func TestMarkdownNamesTheRegistrySource(t *testing.T) {
	r := Build(Plan{RunID: "r", Source: "o/r feature at abc (branch feature gone; read at refs/pull/7/head, the PR's last head)"}, nil)
	md := Markdown(r, MarkdownOptions{})
	assert.Contains(t, md, "refs/pull/7/head")
	var html strings.Builder
	require.NoError(t, WriteHTML(&html, r, HTMLOptions{}))
	assert.Contains(t, html.String(), "refs/pull/7/head")
}

// TestManyIntentsWorstFirst: the comment lists intents worst label first
// (plan order within a label) at any size, so the rows cut for room are the
// least pressing.
func TestManyIntentsWorstFirst(t *testing.T) {
	for _, n := range []int{3, manyIntents + 1} {
		r := bigReport(n)
		md := Markdown(r, MarkdownOptions{FullReportURL: fixtureURL})
		narrow, _, _ := strings.Cut(md, "<details><summary>Every figure")
		var ranks []int
		var ids []string
		for _, line := range strings.Split(narrow, "\n") {
			for _, l := range pairbench.Labels {
				if strings.HasPrefix(line, "| `intent-") && strings.Contains(line, "| **"+string(l)+"** ") {
					rank := l.Rank()
					if strings.Contains(line, "** (placebo) |") {
						rank += len(pairbench.Labels) // placebo intents last
					}
					ranks = append(ranks, rank)
					ids = append(ids, strings.Fields(line)[1])
				}
			}
		}
		require.Len(t, ranks, n, "every row is there once")
		assert.True(t, slices.IsSorted(ranks), "rows worst label first: %v", ranks)
		for i := 1; i < len(ids); i++ {
			if ranks[i] == ranks[i-1] {
				assert.Less(t, ids[i-1], ids[i], "plan order within a label")
			}
		}
	}
}

// TestCheckSummaryIsShort: the check run's summary is the verdict line,
// the agent and model benched (as the comment names them), and the worst
// few intents, with a link to the report.
func TestCheckSummaryIsShort(t *testing.T) {
	r := bigReport(300)
	r.Model.Agent = "claude-code 2.0.14"
	s := CheckSummary(r, MarkdownOptions{FullReportURL: fixtureURL})
	assert.True(t, strings.HasPrefix(s, "**pairbench verdict: less accurate** (worst of 300 intents"))
	names := "Run `demo-2026-11-29` · agent `claude-code 2.0.14` · model `scripted/pairbench-scripted`"
	assert.Contains(t, s, "\n\n"+names+"\n\n", "the second line names the agent and model")
	assert.Contains(t, Markdown(r, MarkdownOptions{}), names, "as the comment does")
	assert.Equal(t, checkSummaryIntents, strings.Count(s, "| `intent-"))
	assert.Contains(t, s, "_295 more intents (")
	assert.Contains(t, s, "[full report](<"+fixtureURL+">)")
	assert.Less(t, len(s), 2000)
	assert.NotContains(t, s, "<details>")
}

// TestMarkdownWholeIsWhatFitKeeps: when Markdown takes the whole comment
// without fitting it, fitting it would have left nothing out.
func TestMarkdownWholeIsWhatFitKeeps(t *testing.T) {
	wholes := 0
	for _, r := range []*Report{fixtureReport(), bigReport(3), bigReport(25), Build(Plan{RunID: "r"}, nil)} {
		for limit := 500; limit <= MarkdownLimit; limit += 211 {
			c := newMdComment(r, MarkdownOptions{FullReportURL: fixtureURL})
			whole, ok := c.whole(limit)
			if !ok {
				continue
			}
			wholes++
			c.fit(limit)
			require.Equal(t, mdExec("comment", c), whole, "limit %d", limit)
		}
	}
	assert.Positive(t, wholes)
}

// TestMarkdownIsItsMeasuredParts: the comment template writes exactly
// the parts Markdown measured to fit it in its limit, whatever the limit;
// so, once the parts that always show fit, the comment is never cut by
// capMarkdown's last guard.
func TestMarkdownIsItsMeasuredParts(t *testing.T) {
	r := bigReport(60)
	opts := MarkdownOptions{FullReportURL: fixtureURL}
	v := newMarkdownView(r, opts, firstScreen)
	fixed := len(mdExec("first screen", v)) + len(mdExec("run checks", v)) + len(mdExec("sections cut", mdCut{N: len(v.worst) + 4, Link: v.Link}))
	for limit := fixed; limit <= MarkdownLimit; limit += 997 {
		opts.Limit = limit
		c := newMdComment(r, opts)
		c.fit(limit)
		parts := mdExec("first screen", c.markdownView)
		for _, f := range []*mdFold{c.Others, c.Figures} {
			if f != nil {
				parts += mdExec("fold", *f)
			}
		}
		for _, in := range c.Details {
			parts += mdExec("intent details", in)
		}
		if c.KeptTools != nil {
			parts += mdExec("tools", c.KeptTools)
		}
		if c.KeptAdoption != nil {
			parts += mdExec("adoption", c.KeptAdoption)
		}
		if c.SectionsCut != nil {
			parts += mdExec("sections cut", *c.SectionsCut)
		}
		parts += mdExec("run checks", c.markdownView)
		require.Equal(t, parts, mdExec("comment", c), "limit %d", limit)
		md := Markdown(r, opts)
		require.LessOrEqual(t, len(md), limit)
		require.NotContains(t, md, "The rest of this report did not fit", "limit %d", limit)
	}
}
