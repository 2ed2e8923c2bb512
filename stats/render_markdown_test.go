package stats

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
	assert.Equal(t, "**pairbench verdict: less accurate** (worst of 10 intents: 1 less accurate, 1 slower, 1 mixed, 1 no adoption, 1 no signal, 2 inconclusive, 1 faster, 1 more accurate, 1 better) · **scripted model, not an LLM**", first)
	assert.Contains(t, md, "> [!WARNING]\n> These results come from a scripted model")

	r.Model = Model{Name: "openai/gpt-6-luna"}
	r.Verdict = ""
	md = Markdown(r, MarkdownOptions{})
	first, _, _ = strings.Cut(md, "\n")
	assert.True(t, strings.HasPrefix(first, "**pairbench verdict: less accurate** (worst of 10 intents"), "the verdict falls back to the worst label: %q", first)
	assert.NotContains(t, md, "scripted", "a real model is not called scripted")

	md = Markdown(&Report{V: ReportVersion, RunID: "empty"}, MarkdownOptions{})
	assert.True(t, strings.HasPrefix(md, "**pairbench verdict: none**: no intents in this run\n"), md)
}

func TestMarkdownSaysSpeedIsConditional(t *testing.T) {
	md := Markdown(fixtureReport(), MarkdownOptions{})
	assert.Contains(t, md, "conditional on both arms succeeding")
	assert.Contains(t, md, "```mermaid\nxychart-beta\n")
	assert.Contains(t, md, `x-axis ["books-less", "books-slower", "books-same", "weather-unused", "books-flat", "weather-few", "books-fast", "books-accurate", "books-better"]`,
		"the chart has a bar per intent with speed, and none for the intent without")
	assert.Contains(t, md, "bar [1.05, 0.45, 2.40, 1.00, 1.10, 1.90, 2.60, 1.10, 3.10]")
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
	assert.Equal(t, 1, strings.Count(md, "<img"), "the img tag appears only in its code span")
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
		assert.Contains(t, md, "| `"+in.ID+"` |", "every summary row is kept")
	}
	assert.Less(t, strings.Count(md, "<details>"), 60+2, "some details are trimmed")
	assert.Regexp(t, `_\d+ sections did not fit in this comment; see the \[full report\]\(<`+fixtureURL+`>\)\._`, md)
	assert.Contains(t, md, "### Run checks", "the footer is kept")
	assert.Contains(t, md, "conditional on both arms succeeding")
}

func TestMarkdownCapHugeReport(t *testing.T) {
	r := bigReport(5000)
	md := Markdown(r, MarkdownOptions{FullReportURL: fixtureURL})
	assert.LessOrEqual(t, len(md), MarkdownLimit)
	assert.LessOrEqual(t, utf8.RuneCountInString(md), 60_000)
	assert.True(t, utf8.ValidString(md))
	assert.True(t, strings.HasPrefix(md, "**pairbench verdict: less accurate** (worst of 5000 intents"), "verdict line first")
	assert.Contains(t, md, "| `intent-00000-", "the first summary rows are kept")
	assert.Regexp(t, `_\d+ more intents, and every intent's details, did not fit in this comment; see the \[full report\]`, md)
	assert.NotContains(t, md, "<details>", "no details when not even the summary fits")
	assert.Contains(t, md, "### Run checks")
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
	require.NoError(t, WriteHTML(&html, r))
	assert.Contains(t, html.String(), "refs/pull/7/head")
}

// TestManyIntentsWorstFirst: past manyIntents intents the comment lists
// them worst label first (plan order within a label) and says so, so the
// rows cut for room are the least pressing; up to it, plan order stays.
func TestManyIntentsWorstFirst(t *testing.T) {
	r := bigReport(manyIntents + 1)
	md := Markdown(r, MarkdownOptions{FullReportURL: fixtureURL})
	assert.Contains(t, md, fmt.Sprintf("_%d intents, worst label first._", manyIntents+1))
	var ranks []int
	var ids []string
	for _, line := range strings.Split(md, "\n") {
		for _, l := range pairbench.Labels {
			if strings.HasPrefix(line, "| `intent-") && strings.Contains(line, "| **"+string(l)+"** |") {
				ranks = append(ranks, l.Rank())
				ids = append(ids, strings.Fields(line)[1])
			}
		}
	}
	require.Len(t, ranks, manyIntents+1, "every row is there")
	assert.True(t, slices.IsSorted(ranks), "rows worst label first: %v", ranks)
	for i := 1; i < len(ids); i++ {
		if ranks[i] == ranks[i-1] {
			assert.Less(t, ids[i-1], ids[i], "plan order within a label")
		}
	}

	few := Markdown(bigReport(manyIntents), MarkdownOptions{})
	assert.NotContains(t, few, "worst label first")
	assert.Less(t, strings.Index(few, "intent-00000-"), strings.Index(few, "intent-00001-"))
}
