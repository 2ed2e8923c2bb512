package stats

import (
	"fmt"
	"html/template"
	"io"
	"math"
	"strconv"

	"github.com/pairbench/pairbench"
)

// WriteHTML writes r as one self-contained HTML page: the content of the
// Markdown rendering, never trimmed, plus two inline SVG plots (each intent's
// share of discordant pairs won by treatment, and a log-scale plot of its
// typical speedup, both with their Holm-level intervals). It needs no JavaScript and loads
// nothing: styles are inline and there are no external resources. Every
// string from the report is escaped by html/template.
func WriteHTML(w io.Writer, r *Report) error {
	v := newView(r)
	page := htmlPage{
		reportView:   v,
		SpeedNote:    speedNote,
		HolmNote:     holmNote,
		ScriptedNote: scriptedNote,
		Forest:       sharePlot(v.Intents),
		SpeedPlot:    speedPlot(v.Intents),
	}
	if err := htmlTemplate.Execute(w, page); err != nil {
		return fmt.Errorf("write html report: %w", err)
	}
	return nil
}

type htmlPage struct {
	reportView
	SpeedNote    string
	HolmNote     string
	ScriptedNote string
	Forest       *svgPlot
	SpeedPlot    *svgPlot
}

// svgPlot is a dot-and-interval plot, one row per intent, laid out in
// pixels. Plot area is X from Left to Right.
type svgPlot struct {
	Title         string
	Width, Height float64
	Left, Right   float64
	Top, Bottom   float64
	// RefX is the no-effect line (Δ = 0, speedup = 1×).
	RefX  float64
	Ticks []svgTick
	Rows  []svgRow
	// Axis names the x axis.
	Axis string
}

type svgTick struct {
	X     float64
	Label string
}

type svgRow struct {
	Y     float64
	Name  string
	Class string
	// X is the estimate; X1..X2 the interval, clipped to the plot area.
	X, X1, X2 float64
	// LoCut and HiCut mark an interval that runs past the plot area.
	LoCut, HiCut bool
	// Value is the estimate and interval as text.
	Value string
}

const (
	plotWidth  = 760.0
	plotLeft   = 230.0
	plotRight  = 560.0
	plotRowH   = 24.0
	plotTop    = 12.0
	plotBottom = 40.0
)

// newPlot lays out rows (name, class, est, lo, hi, text) on scale, which
// maps a value to [0, 1] of the plot area. Rows with an undefined estimate
// are left out; it returns nil when none is left.
func newPlot(title, axis string, scale func(float64) float64, ref float64, ticks []svgTick, rows []plotInput) *svgPlot {
	p := &svgPlot{Title: title, Axis: axis, Width: plotWidth, Left: plotLeft, Right: plotRight, Top: plotTop}
	x := func(f float64) float64 { return svgRound(plotLeft + (plotRight-plotLeft)*min(max(f, 0), 1)) }
	for _, in := range rows {
		if math.IsNaN(in.Est) {
			continue
		}
		// An undefined bound is an unbounded one.
		lo, hi := scale(in.Lo), scale(in.Hi)
		if math.IsNaN(lo) {
			lo = math.Inf(-1)
		}
		if math.IsNaN(hi) {
			hi = math.Inf(1)
		}
		p.Rows = append(p.Rows, svgRow{
			Y:    svgRound(plotTop + plotRowH*(float64(len(p.Rows))+0.5)),
			Name: clipText(in.Name, 30), Class: in.Class, Value: in.Text,
			X: x(scale(in.Est)), X1: x(lo), X2: x(hi),
			LoCut: lo < 0, HiCut: hi > 1,
		})
	}
	if len(p.Rows) == 0 {
		return nil
	}
	p.Bottom = svgRound(plotTop + plotRowH*float64(len(p.Rows)))
	p.Height = p.Bottom + plotBottom
	p.RefX = x(scale(ref))
	for _, t := range ticks {
		p.Ticks = append(p.Ticks, svgTick{X: x(t.X), Label: t.Label})
	}
	return p
}

type plotInput struct {
	Name, Class, Text string
	Est, Lo, Hi       float64
}

// sharePlot plots each intent's share of discordant pairs won by
// treatment, with its Holm-level interval, on [0, 1].
func sharePlot(intents []intentView) *svgPlot {
	rows := make([]plotInput, 0, len(intents))
	for _, in := range intents {
		if iv := in.ShareIv; iv != nil && !iv.TooFew {
			rows = append(rows, plotInput{in.ID, labelClass(in.Label), in.Share, iv.Est, iv.Lo, iv.Hi})
		}
	}
	scale := func(q float64) float64 { return q }
	var ticks []svgTick
	for _, t := range []float64{0, 0.25, 0.5, 0.75, 1} {
		ticks = append(ticks, svgTick{t, showPct(t)})
	}
	return newPlot("Treatment's share of the discordant pairs, with its Holm-level interval (½ = no difference)", "share of the pairs where exactly one arm was correct that treatment won", scale, 0.5, ticks, rows)
}

// speedPlot plots each intent's typical speedup on a log scale spanning
// powers of two from at most 1/16× to at most 16×; intervals past that are
// cut and marked.
func speedPlot(intents []intentView) *svgPlot {
	var rows []plotInput
	lo, hi := 0.5, 2.0
	for _, in := range intents {
		r := in.SpeedupIv
		if r == nil || r.TooFew {
			continue
		}
		rows = append(rows, plotInput{in.ID, labelClass(in.Label), in.Speedup, r.Est, r.Lo, r.Hi})
		for _, b := range []float64{r.Est, r.Lo, r.Hi} {
			if b > 0 && !math.IsInf(b, 0) {
				lo, hi = min(lo, b), max(hi, b)
			}
		}
	}
	minExp := max(math.Floor(math.Log2(lo)), -4)
	maxExp := min(math.Ceil(math.Log2(hi)), 4)
	scale := func(s float64) float64 {
		if s <= 0 {
			return math.Inf(-1)
		}
		return (math.Log2(s) - minExp) / (maxExp - minExp)
	}
	var ticks []svgTick
	for e := minExp; e <= maxExp; e++ {
		ticks = append(ticks, svgTick{scale(math.Exp2(e)), strconv.FormatFloat(math.Exp2(e), 'g', -1, 64) + "×"})
	}
	return newPlot("Typical speedup (Hodges–Lehmann, both-correct pairs) with its Holm-level interval; log scale", "control ÷ treatment wall time (above 1× = treatment faster)", scale, 1, ticks, rows)
}

func svgRound(x float64) float64 { return math.Round(x*10) / 10 }

// labelClass is a CSS class for a label's colour: worse than no adoption,
// between, or better than inconclusive.
func labelClass(l pairbench.Label) string {
	switch r := l.Rank(); {
	case r < 0:
		return "l-none"
	case r <= pairbench.Mixed.Rank():
		return "l-bad"
	case r <= pairbench.Inconclusive.Rank():
		return "l-meh"
	default:
		return "l-good"
	}
}

var htmlTemplate = template.Must(template.New("report").Funcs(template.FuncMap{
	"labelClass": labelClass,
	"plural":     pluralize,
	"add":        func(a, b float64) float64 { return a + b },
}).Parse(htmlSource))

const htmlSource = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>pairbench report {{.RunID}}</title>
<style>
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: #1f2328; margin: 2rem auto; max-width: 1400px; padding: 0 1rem; }
h1 { font-size: 1.5rem; margin: 0 0 .5rem; }
h2 { font-size: 1.2rem; border-bottom: 1px solid #d0d7de; padding-bottom: .2rem; margin-top: 2rem; }
table { border-collapse: collapse; margin: .5rem 0; }
th, td { border: 1px solid #d0d7de; padding: .25rem .5rem; text-align: left; vertical-align: top; }
th { background: #f6f8fa; }
td.num { text-align: right; }
.scroll { overflow-x: auto; }
table.summary td, table.summary code { white-space: nowrap; word-break: normal; }
code { font: 12px ui-monospace, SFMono-Regular, Menlo, monospace; background: #f6f8fa; padding: 0 .2rem; border-radius: 3px; word-break: break-all; }
.label { font-weight: 600; padding: 0 .4rem; border-radius: 1rem; white-space: nowrap; }
.l-bad { color: #82071e; background: #ffebe9; }
.l-meh { color: #57606a; background: #eaeef2; }
.l-good { color: #116329; background: #dafbe1; }
.l-none { color: #57606a; }
.warning { border-left: 4px solid #bf8700; background: #fff8c5; padding: .5rem .75rem; }
.note { color: #57606a; }
details { margin: .5rem 0; border: 1px solid #d0d7de; border-radius: 6px; padding: .25rem .75rem; }
summary { cursor: pointer; }
dl { display: grid; grid-template-columns: max-content 1fr; gap: .2rem 1rem; }
dt { font-weight: 600; }
dd { margin: 0; }
svg { max-width: 100%; height: auto; }
svg text { font: 12px system-ui, sans-serif; fill: #1f2328; }
svg .grid { stroke: #d0d7de; }
svg .ref { stroke: #57606a; stroke-dasharray: 4 3; }
svg .iv { stroke-width: 2; }
svg .l-bad { stroke: #cf222e; fill: #cf222e; }
svg .l-meh { stroke: #6e7781; fill: #6e7781; }
svg .l-good { stroke: #1a7f37; fill: #1a7f37; }
svg .l-none { stroke: #6e7781; fill: #6e7781; }
</style>
</head>
<body>
<header>
<h1>pairbench verdict: <span class="label {{labelClass .Verdict}}">{{if .Verdict}}{{.Verdict}}{{else}}none{{end}}</span></h1>
<p>{{if .Total}}Worst label of {{.Total}} {{plural .Total "intent"}}: {{.Counts}}.{{else}}No intents in this run.{{end}}</p>
{{if .Scripted}}<p class="warning"><strong>Scripted model, not an LLM.</strong> {{.ScriptedNote}}</p>{{end}}
<p>Run <code>{{.RunID}}</code> · model <code>{{.Model}}</code>{{if .Source}} · registry {{.Source}}{{end}}</p>
</header>

<h2>Intents</h2>
{{if .Many}}<p>{{.Total}} intents by label, worst first; open a label for its intents, and an intent for its details.</p>
{{range .Groups}}<details class="group">
<summary><span class="label {{labelClass .Label}}">{{.Label}}</span> · {{len .Intents}} {{plural (len .Intents) "intent"}}</summary>
{{template "summary" .Intents}}
</details>
{{end}}{{else}}{{template "summary" .Intents}}
{{end}}<p class="note">{{.SpeedNote}} {{.HolmNote}}</p>

{{with .Forest}}{{if $.Many}}<details class="group"><summary>Plot: {{.Title}} ({{len .Rows}} intents)</summary>
{{template "plot" .}}</details>{{else}}{{template "plot" .}}{{end}}{{end}}
{{with .SpeedPlot}}{{if $.Many}}<details class="group"><summary>Plot: {{.Title}} ({{len .Rows}} intents)</summary>
{{template "plot" .}}</details>{{else}}{{template "plot" .}}{{end}}{{end}}

{{if .Intents}}<h2>Details</h2>
{{range $in := .Intents}}<details id="{{$in.Anchor}}">
<summary><code>{{$in.ID}}</code> · <span class="label {{labelClass $in.Label}}">{{$in.Label}}</span></summary>
<dl>
{{range $in.Facts}}<dt>{{.Name}}</dt><dd>{{.Text}}</dd>
{{end}}</dl>
<table>
<tr><th></th><th>control</th><th>treatment</th></tr>
{{range $in.Arms}}<tr><th>{{.Name}}</th><td>{{.Control}}</td><td>{{.Treatment}}</td></tr>
{{end}}</table>
</details>
{{end}}{{end}}
{{if .Tools}}<h2>WebMCP tool calls and failures</h2>
<table>
<tr><th>domain</th><th>tool</th><th>registered</th><th>calls</th><th>failures</th><th>most common errors</th></tr>
{{range .Tools}}<tr><td><code>{{.Domain}}</code></td><td><code>{{.Tool}}</code></td><td>{{if .Registered}}yes{{if .NotRegistered}}, but did not register in {{.NotRegistered}} trial(s){{end}}{{else}}no (page's own){{end}}</td><td class="num">{{.Calls}}</td><td class="num">{{.Failures}}</td><td>{{range .Errors}}<code>{{.Error}}</code> ×{{.Count}}<br>{{else}}—{{end}}</td></tr>
{{end}}</table>
{{end}}
{{if .Adopt}}<h2>Adoption stage</h2>
<p class="note">Treatment-only trials run before any pair; a domain whose agents never used a registered tool gets no pairs.</p>
<table>
<tr><th>domain</th><th>scored trials</th><th>used a registered tool</th><th>aborted</th></tr>
{{range .Adopt}}<tr><td><code>{{.Domain}}</code></td><td class="num">{{.Trials}}</td><td class="num">{{.Adopted}}</td><td class="num">{{.Aborted}}</td></tr>
{{end}}</table>
{{end}}
<footer>
<h2>Run checks</h2>
<dl>
{{range .Footer}}<dt>{{.Name}}</dt><dd>{{.Text}}</dd>
{{end}}</dl>
</footer>
</body>
</html>
{{define "summary"}}<div class="scroll">
<table class="summary">
<tr><th>intent</th><th>label</th><th>n</th><th>control correct</th><th>treatment correct</th><th>Δ accuracy</th><th>discordant pairs won by treatment</th><th>Holm p accuracy</th><th>speedup</th><th>Holm p speed</th><th>adoption</th></tr>
{{range $in := .}}<tr><td><a href="#{{$in.Anchor}}"><code>{{$in.ID}}</code></a></td><td><span class="label {{labelClass $in.Label}}">{{$in.Label}}</span></td><td class="num">{{$in.N}}</td><td>{{$in.Control}}</td><td>{{$in.Treatment}}</td><td>{{$in.Delta}}</td><td>{{$in.Share}}</td><td>{{$in.PAccuracy}}</td><td>{{$in.Speedup}}</td><td>{{$in.PSpeed}}</td><td>{{$in.Adoption}}</td></tr>
{{end}}</table>
</div>{{end}}{{define "plot"}}<h2>{{.Title}}</h2>
<svg role="img" aria-label="{{.Title}}" width="{{.Width}}" height="{{.Height}}" viewBox="0 0 {{.Width}} {{.Height}}">
{{range .Ticks}}<line class="grid" x1="{{.X}}" x2="{{.X}}" y1="{{$.Top}}" y2="{{$.Bottom}}"/><text x="{{.X}}" y="{{add $.Bottom 16}}" text-anchor="middle">{{.Label}}</text>
{{end}}<line class="ref" x1="{{.RefX}}" x2="{{.RefX}}" y1="{{.Top}}" y2="{{.Bottom}}"/>
<text x="{{.Left}}" y="{{add .Bottom 34}}">{{.Axis}}</text>
{{range .Rows}}<g class="{{.Class}}"><title>{{.Name}}: {{.Value}}</title>
<text x="8" y="{{add .Y 4}}" class="name">{{.Name}}</text>
<line class="iv {{.Class}}" x1="{{.X1}}" x2="{{.X2}}" y1="{{.Y}}" y2="{{.Y}}"/>{{if .LoCut}}<text x="{{add .X1 -10}}" y="{{add .Y 4}}" class="{{.Class}}">◀</text>{{end}}{{if .HiCut}}<text x="{{add .X2 2}}" y="{{add .Y 4}}" class="{{.Class}}">▶</text>{{end}}
<circle class="{{.Class}}" cx="{{.X}}" cy="{{.Y}}" r="4.5"/>
<text x="{{add $.Right 16}}" y="{{add .Y 4}}">{{.Value}}</text></g>
{{end}}</svg>
{{end}}`
