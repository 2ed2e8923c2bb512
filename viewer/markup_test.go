package viewer

import (
	"bytes"
	"fmt"
	"html/template"
	"math/rand/v2"
	"path"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench"
)

// The intent page's pair rows and paired plot as html/template would write
// them: the reference markup.go must match byte for byte.
const (
	refPairRows = `{{range .}}<tr class="p-row pc-{{.Class}}{{if .Disagree}} pd{{end}}"><td class="num">{{if .Page}}<a href="{{.Page}}">pair {{.Pair}}</a>{{else}}{{.Pair}}{{end}}</td><td>{{.Order}}</td>{{range .Arms}}<td>{{if .Outcome}}<span class="outcome o-{{.Outcome}}">{{.Outcome}}</span> {{.Wall}}<small>{{.Turns}} turns{{if .Adopted}} · used a registered tool{{end}}{{if gt .Attempts 1}} · {{.Attempts}} attempts{{end}}</small>{{else}}no row{{end}}</td>{{end}}<td><span class="swatch k-{{.Class}}"></span>{{.Class}}</td></tr>
{{end}}`
	refPlot = `{{if not .Lines}}<p class="note">No complete pair yet, so nothing to plot{{if .Incomplete}} ({{.Incomplete}} incomplete){{end}}.</p>{{else}}<svg role="img" aria-label="Paired wall times, control to treatment" width="{{.Width}}" height="{{.Height}}" viewBox="0 0 {{.Width}} {{.Height}}">
{{range .Ticks}}<line class="grid" x1="{{$.ControlX}}" x2="{{$.TreatX}}" y1="{{.Y}}" y2="{{.Y}}"/><text x="{{add $.ControlX -8.0}}" y="{{add .Y 4.0}}" text-anchor="end">{{.Label}}</text>
{{end}}<line class="axis" x1="{{.ControlX}}" x2="{{.ControlX}}" y1="{{.Top}}" y2="{{.Bottom}}"/><line class="axis" x1="{{.TreatX}}" x2="{{.TreatX}}" y1="{{.Top}}" y2="{{.Bottom}}"/>
<text x="{{.ControlX}}" y="{{add .Bottom 18.0}}" text-anchor="middle">control</text><text x="{{.TreatX}}" y="{{add .Bottom 18.0}}" text-anchor="middle">treatment</text>
{{range .Lines}}{{if .Href}}<a href="{{.Href}}" class="p-row pc-{{.Class}}{{if .Disagree}} pd{{end}}">{{else}}<g class="p-row pc-{{.Class}}{{if .Disagree}} pd{{end}}">{{end}}<title>{{.Title}}</title><line class="c-{{.Class}}" x1="{{$.ControlX}}" x2="{{$.TreatX}}" y1="{{.Y1}}" y2="{{.Y2}}" stroke-width="1.5"/>{{if .Href}}</a>{{else}}</g>{{end}}
{{end}}</svg>
<p class="note">{{.Shown}} complete {{if eq .Shown 1}}pair{{else}}pairs{{end}}, one line each from control's wall time to treatment's: {{.TreatFaster}} down (treatment faster), {{.Slower}} up.{{if .Incomplete}} {{.Incomplete}} incomplete left out.{{end}}<br><span class="swatch k-control-only"></span>only control correct <span class="swatch k-treatment-only"></span>only treatment correct <span class="swatch k-both"></span>both <span class="swatch k-neither"></span>neither</p>{{end}}`
)

// TestMarkupIsWhatTheTemplateWrites: the pair rows and paired plot written
// by markup.go are byte for byte what html/template writes for them, over
// every class, outcome and flag, and over hostile text in every string a
// row could ever bring (links are made of slugs, hostile ids included).
func TestMarkupIsWhatTheTemplateWrites(t *testing.T) {
	rowsRef := template.Must(template.New("rows").Parse(refPairRows))
	plotRef := template.Must(template.New("plot").Funcs(template.FuncMap{"add": func(a, b float64) float64 { return a + b }}).Parse(refPlot))
	texts := []string{"", "AB", "control ran first", "12.5 s", hostileMarkup, "a+b & 'c' \"d\" <e>", "\x00nul", "caf\xc3\xa9 \xff bad", "→ ·"}
	ids := []string{"books-cheapest", hostileMarkup, "x-0000", "../../etc"}
	outcomes := append([]pairbench.Outcome{""}, pairbench.Outcomes...)
	rng := rand.New(rand.NewPCG(20, 19))
	pick := func(s []string) string { return s[rng.IntN(len(s))] }
	for round := range 200 {
		var rows []pairRow
		plot := &pairedPlot{Width: 420 + round, Height: 300, ControlX: 120, TreatX: 330.5, Top: 16, Bottom: 270.25,
			Shown: rng.IntN(3), Incomplete: rng.IntN(3), TreatFaster: rng.IntN(30), Slower: rng.IntN(30)}
		for range rng.IntN(7) {
			plot.Ticks = append(plot.Ticks, plotTick{Y: round1(rng.Float64() * 300), Label: pick(texts)})
		}
		for i := range rng.IntN(6) {
			class := pairClasses[rng.IntN(len(pairClasses))].Class
			if rng.IntN(8) == 0 {
				class = pairClass(pick(texts))
			}
			r := pairRow{Pair: rng.IntN(1000) - 1, Order: pick(texts), Class: class, Disagree: rng.IntN(2) == 0}
			href := ""
			if rng.IntN(2) == 0 {
				r.Page = path.Join(slug(pick(ids)), fmt.Sprint(r.Pair)+".html")
				href = fmt.Sprintf("%s/%d.html", slug(pick(ids)), i)
			}
			for a := range r.Arms {
				o := string(outcomes[rng.IntN(len(outcomes))])
				if rng.IntN(8) == 0 {
					o = pick(texts)
				}
				r.Arms[a] = armCell{Outcome: o, Wall: pick(texts), Turns: rng.IntN(40), Adopted: rng.IntN(2) == 0, Attempts: rng.IntN(4)}
			}
			rows = append(rows, r)
			plot.Lines = append(plot.Lines, plotLine{Y1: round1(rng.Float64() * 300), Y2: float64(rng.IntN(300)), Class: class,
				Disagree: r.Disagree, Title: pick(texts), Href: href})
		}
		var want bytes.Buffer
		require.NoError(t, rowsRef.Execute(&want, rows))
		assert.Equal(t, want.String(), string(pairRowsHTML(rows)), "round %d: pair rows", round)

		want.Reset()
		require.NoError(t, plotRef.Execute(&want, plot))
		assert.Equal(t, want.String(), string(plot.html()), "round %d: paired plot", round)
	}
}

// hostileMarkup is text that would leave its element or attribute, were it
// not escaped.
const hostileMarkup = `"><script>alert(1)</script><img src=x onerror=alert(1)>'&amp;+`
