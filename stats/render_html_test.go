package stats

import (
	"bytes"
	"math"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func renderHTML(t *testing.T, r *Report) string {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, WriteHTML(&buf, r))
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

func TestForestPlotGeometry(t *testing.T) {
	v := newView(fixtureReport())
	p := forestPlot(v.Intents)
	require.NotNil(t, p)
	// The intent with no complete pair has no estimate and no row.
	require.Len(t, p.Rows, len(v.Intents)-1)
	assert.InDelta(t, (plotLeft+plotRight)/2, p.RefX, 0.05, "Δ = 0 is in the middle of [-1, 1]")

	less, better := p.Rows[0], p.Rows[8]
	assert.Equal(t, "books-less", less.Name)
	assert.Less(t, less.X, p.RefX, "a negative Δ is left of zero")
	assert.Greater(t, better.X, p.RefX, "a positive Δ is right of zero")
	for _, row := range p.Rows {
		assert.LessOrEqual(t, row.X1, row.X, "%s: interval starts left of its estimate", row.Name)
		assert.GreaterOrEqual(t, row.X2, row.X, "%s: interval ends right of its estimate", row.Name)
		assert.False(t, row.LoCut || row.HiCut, "%s: a Δ interval lies within [-1, 1]", row.Name)
	}
	assert.Equal(t, "books-less", p.Rows[0].Name)
	assert.Equal(t, "l-bad", less.Class)
	assert.Equal(t, "l-good", better.Class)
}

func TestSpeedPlotIsLogScale(t *testing.T) {
	v := newView(fixtureReport())
	p := speedPlot(v.Intents)
	require.NotNil(t, p)
	require.Len(t, p.Rows, 9, "every intent with speed")

	ticks := make(map[string]float64)
	for _, tk := range p.Ticks {
		ticks[tk.Label] = tk.X
	}
	require.Contains(t, ticks, "0.25×", "0.38 is below 0.5, so the axis starts at 0.25")
	require.Contains(t, ticks, "4×", "3.9 is above 2, so the axis ends at 4")
	assert.Equal(t, ticks["1×"], p.RefX)
	assert.InDelta(t, ticks["1×"]-ticks["0.5×"], ticks["2×"]-ticks["1×"], 0.11, "halving and doubling are the same distance")

	few := p.Rows[5]
	assert.Equal(t, "weather-few", few.Name)
	assert.True(t, few.HiCut, "an unbounded interval is cut and marked")
	assert.Equal(t, plotRight, few.X2)
}

func TestSpeedPlotClampsExtremes(t *testing.T) {
	r := fixtureReport()
	r.Intents[0].Speed.Ratio = Interval{Est: 100, Lo: 50, Hi: math.Inf(1)}
	r.Intents[1].Speed.Ratio = Interval{Est: 0.001, Lo: 0, Hi: 0.002}
	p := speedPlot(newView(r).Intents)
	require.NotNil(t, p)
	assert.Equal(t, "0.0625×", p.Ticks[0].Label, "the axis stops at 1/16×")
	assert.Equal(t, "16×", p.Ticks[len(p.Ticks)-1].Label, "the axis stops at 16×")
	assert.Equal(t, plotRight, p.Rows[0].X)
	assert.True(t, p.Rows[0].HiCut)
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
		if err := WriteHTML(&buf, r); err != nil {
			b.Fatal(err)
		}
	}
}
