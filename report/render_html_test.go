package report

import (
	"bytes"
	"fmt"
	"html"
	"math"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/stats"
)

func renderHTML(t *testing.T, r *Report) string {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, WriteHTML(&buf, r, HTMLOptions{}))
	return buf.String()
}

func TestHTMLGolden(t *testing.T) {
	assertGolden(t, "report.html", []byte(renderHTML(t, fixtureReport())))
}

func TestHTMLIsSelfContained(t *testing.T) {
	page := renderHTML(t, fixtureReport())
	for _, banned := range []string{"<script", "<link", "@import", "url(", "http://", "https://", "<iframe", "<object", "<embed"} {
		assert.False(t, strings.Contains(page, banned), "the page must load nothing and run nothing, but it contains %q", banned)
	}
	assert.False(t, regexp.MustCompile(`<[a-z][^>]*\s(src|srcset|on[a-z]+)=`).MatchString(page), "no tag has a source or an event handler")
	for _, tag := range []string{"details", "table", "svg", "dl"} {
		assert.Equal(t, strings.Count(page, "<"+tag), strings.Count(page, "</"+tag+">"), "unbalanced <%s>", tag)
	}
	assert.Equal(t, 2, strings.Count(page, "<svg "), "a forest plot and a speedup plot")
	assert.Contains(t, page, "conditional on both arms succeeding")
	assert.Contains(t, page, "Scripted model, not an LLM.")
}

// TestHTMLPolicyAllowsExactlyItsStyle: the page's one style sheet is the
// one its Content-Security-Policy allows by hash, and the policy lets
// nothing load or run.
func TestHTMLPolicyAllowsExactlyItsStyle(t *testing.T) {
	page := renderHTML(t, fixtureReport())
	m := regexp.MustCompile(`(?s)<style>(.*?)</style>`).FindAllStringSubmatch(page, -1)
	require.Len(t, m, 1, "one style sheet")
	assert.Equal(t, HTMLStyle, m[0][1], "the style sheet is not rewritten by the template")
	assert.Contains(t, HTMLPolicy, StyleSource(m[0][1]))
	csp := regexp.MustCompile(`<meta http-equiv="Content-Security-Policy" content="([^"]*)">`).FindStringSubmatch(page)
	require.Len(t, csp, 2, "the page carries its policy")
	assert.Equal(t, HTMLPolicy, html.UnescapeString(csp[1]))
	for _, d := range []string{"default-src 'none'", "base-uri 'none'", "form-action 'none'"} {
		assert.Contains(t, HTMLPolicy, d)
	}
	assert.NotContains(t, HTMLPolicy, "script-src", "no script may run: default-src 'none' covers it")
	assert.NotContains(t, HTMLPolicy, "unsafe")
}

func TestHTMLEscapesUntrustedText(t *testing.T) {
	page := renderHTML(t, fixtureReport())
	assert.NotContains(t, page, "<img src=x")
	assert.Contains(t, page, "&lt;img src=x onerror=alert(1)&gt;|`@octocat`")
	assert.NotContains(t, page, "<script>alert")
	assert.Contains(t, page, "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;")

	r := fixtureReport()
	r.RunID = `"><script>x</script>`
	r.Model.Name = "</title><script>y</script>"
	page = renderHTML(t, r)
	assert.NotContains(t, page, "<script>")
	assert.Contains(t, page, "<title>pairbench report &#34;&gt;&lt;script&gt;x&lt;/script&gt;</title>")
}

func TestHTMLWithoutScriptedModel(t *testing.T) {
	r := fixtureReport()
	r.Model = Model{Name: "openai/gpt-6-luna"}
	page := renderHTML(t, r)
	assert.NotContains(t, page, "scripted")
	assert.Contains(t, page, "<code>openai/gpt-6-luna</code>")
}

func TestSharePlotGeometry(t *testing.T) {
	v := newView(fixtureReport())
	p := sharePlot(v.Intents)
	require.NotNil(t, p)
	want := 0
	for _, in := range v.Intents {
		if in.ShareIv != nil && !in.ShareIv.TooFew {
			want++
		}
	}
	require.Len(t, p.Rows, want, "every intent with an interval, none with too few pairs")
	assert.InDelta(t, (plotLeft+plotRight)/2, p.RefX, 0.05, "½ is in the middle of [0, 1]")

	rows := map[string]svgRow{}
	for _, row := range p.Rows {
		rows[row.Name] = row
		assert.LessOrEqual(t, row.X1, row.X, "%s: interval starts left of its estimate", row.Name)
		assert.GreaterOrEqual(t, row.X2, row.X, "%s: interval ends right of its estimate", row.Name)
		assert.False(t, row.LoCut || row.HiCut, "%s: a share lies within [0, 1]", row.Name)
	}
	less, better := rows["books-less"], rows["books-better"]
	assert.Less(t, less.X, p.RefX, "control won the discordant pairs: left of ½")
	assert.Greater(t, better.X, p.RefX, "treatment won them: right of ½")
	assert.Equal(t, "l-bad", less.Class)
	assert.Equal(t, "l-good", better.Class)
}

func TestSpeedPlotIsLogScale(t *testing.T) {
	v := newView(fixtureReport())
	p := speedPlot(v.Intents)
	require.NotNil(t, p)
	want := 0
	for _, in := range v.Intents {
		if in.SpeedupIv != nil && !in.SpeedupIv.TooFew {
			want++
		}
	}
	require.Len(t, p.Rows, want, "every intent with a speedup interval, none with too few pairs")

	ticks := make(map[string]float64)
	for _, tk := range p.Ticks {
		ticks[tk.Label] = tk.X
	}
	require.Contains(t, ticks, "0.25×", "0.34 is below 0.5, so the axis starts at 0.25")
	require.Contains(t, ticks, "8×", "4.29 is above 4, so the axis ends at 8")
	assert.Equal(t, ticks["1×"], p.RefX)
	assert.InDelta(t, ticks["1×"]-ticks["0.5×"], ticks["2×"]-ticks["1×"], 0.11, "halving and doubling are the same distance")
}

func TestSpeedPlotClampsExtremes(t *testing.T) {
	r := fixtureReport()
	r.Intents[0].Speed.SpeedupAdj = &stats.ExactInterval{Est: 100, Lo: 50, Hi: math.Inf(1)}
	r.Intents[1].Speed.SpeedupAdj = &stats.ExactInterval{Est: 0.001, Lo: 0, Hi: 0.002}
	p := speedPlot(newView(r).Intents)
	require.NotNil(t, p)
	assert.Equal(t, "0.0625×", p.Ticks[0].Label, "the axis stops at 1/16×")
	assert.Equal(t, "16×", p.Ticks[len(p.Ticks)-1].Label, "the axis stops at 16×")
	assert.Equal(t, plotRight, p.Rows[0].X)
	assert.True(t, p.Rows[0].HiCut, "an unbounded interval is cut and marked")
	assert.False(t, p.Rows[0].LoCut && p.Rows[0].HiCut)
	assert.Equal(t, plotLeft, p.Rows[1].X)
	assert.True(t, p.Rows[1].LoCut)

	page := renderHTML(t, r)
	assert.NotRegexp(t, regexp.MustCompile(`(?i)nan|inf`), stripText(page), "no undefined coordinates reach the SVG")
}

// stripText keeps only the markup's attributes, where undefined numbers
// would show as NaN or Inf.
func stripText(page string) string {
	var b strings.Builder
	for _, m := range regexp.MustCompile(`<(?:line|circle|text|svg)\b[^>]*>`).FindAllString(page, -1) {
		b.WriteString(m)
	}
	return b.String()
}

func BenchmarkWriteHTML(b *testing.B) {
	r := bigReport(200)
	var buf bytes.Buffer
	for b.Loop() {
		buf.Reset()
		if err := WriteHTML(&buf, r, HTMLOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

// TestHTMLManyIntentsFolded: past manyIntents intents the page shows one
// fold per label, worst first, each with its intents' rows linking to their
// details, and folds the plots; up to it, one table as before.
func TestHTMLManyIntentsFolded(t *testing.T) {
	r := bigReport(manyIntents + 1)
	page := renderHTML(t, r)
	counts := map[pairbench.Label]int{}
	for _, in := range r.Intents {
		counts[in.Label]++
	}
	last := -1
	for _, l := range pairbench.Labels {
		if counts[l] == 0 {
			continue
		}
		fold := fmt.Sprintf(`<summary><span class="label %s">%s</span> · %d %s</summary>`, LabelClass(l), l, counts[l], pluralize(counts[l], "intent"))
		at := strings.Index(page, fold)
		require.GreaterOrEqual(t, at, 0, "a fold for %s", l)
		assert.Greater(t, at, last, "%s comes after the worse labels", l)
		last = at
	}
	assert.Equal(t, len(r.Intents), strings.Count(page, `"><td><a href="#intent-`), "every intent has its row")
	for i := range r.Intents {
		assert.Contains(t, page, fmt.Sprintf(`<details id="intent-%d" class="f-row fl-`, i))
	}
	assert.Contains(t, page, "<summary>Plot: Typical speedup")
	assert.Equal(t, 1, strings.Count(renderHTML(t, bigReport(manyIntents)), `<table class="summary">`), "one table up to manyIntents")
	assert.NotContains(t, renderHTML(t, bigReport(manyIntents)), "<summary>Plot:")
}
