package report

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"html/template"
	"io"
	"math"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sync/errgroup"

	"github.com/pairbench/pairbench"
)

// HTMLOptions control WriteHTML.
type HTMLOptions struct {
	// IntentPage returns the relative URL of an intent's page in the report
	// site (its pairs and trials), "" for none. Nil: the report stands
	// alone, and each intent links its details on the page.
	IntentPage func(id string) string
	// Figures are the report's intent fragments when the caller has them
	// rendered already: NewIntentHTML of the same report, whose view
	// WriteHTML then uses too. Nil: WriteHTML renders them.
	Figures *IntentHTML
}

// WriteHTML writes r as one self-contained HTML page, the report site's run
// page: the content of the Markdown rendering, never trimmed, filters by
// label, by the outcomes its trials had and by pairs where the arms
// disagree (CSS only), plus two inline SVG plots (each intent's share of
// discordant pairs won by treatment, and a log-scale plot of its typical
// speedup, both with their Holm-level intervals). It runs no script and
// loads nothing: its one style sheet is inline and allowed by its
// Content-Security-Policy (HTMLPolicy) by hash. Every string from the
// report is escaped by html/template.
func WriteHTML(w io.Writer, r *Report, opts HTMLOptions) error {
	figures := opts.Figures
	if figures == nil {
		var err error
		if figures, err = NewIntentHTML(r); err != nil {
			return err
		}
	}
	v := figures.view
	page := htmlPage{
		reportView:     v,
		SpeedNote:      speedNote,
		HolmNote:       holmNote,
		ScriptedNote:   scriptedNote,
		IncompleteNote: incompleteNote,
		ForcedNote:     forcedNote,
		Forest:         sharePlot(v.Intents),
		SpeedPlot:      speedPlot(v.Intents),
		Policy:         HTMLPolicy,
		Style:          template.CSS(HTMLStyle),
		Filters:        newFilters(v),
		Page:           map[string]string{},
	}
	if opts.IntentPage != nil {
		for _, in := range v.Intents {
			page.Page[in.Anchor] = opts.IntentPage(in.ID)
		}
	}
	page.Figures = figures.frags
	var err error
	if page.Arms, err = htmlArms(r); err != nil {
		return err
	}
	if err := htmlTemplate.Execute(w, page); err != nil {
		return fmt.Errorf("write html report: %w", err)
	}
	return nil
}

// IntentHTML is the details of a report's intents as HTML fragments: each
// intent's facts and its per-arm table, styled by HTMLStyle. Each is
// rendered once and shown twice, on the run page (WriteHTML, given them in
// HTMLOptions.Figures) and on the report site's intent pages.
type IntentHTML struct {
	view  reportView
	frags []template.HTML // in the report's order
	byID  map[string]int
}

// NewIntentHTML renders the fragments of r's intents, on every core.
func NewIntentHTML(r *Report) (*IntentHTML, error) {
	v := newView(r)
	h := &IntentHTML{view: v, frags: make([]template.HTML, len(v.Intents)), byID: make(map[string]int, len(v.Intents))}
	for i := range v.Intents {
		h.byID[v.Intents[i].ID] = i
	}
	workers := runtime.GOMAXPROCS(0)
	var eg errgroup.Group
	for w := range workers {
		eg.Go(func() error {
			var b bytes.Buffer
			for i := w; i < len(v.Intents); i += workers {
				in := &v.Intents[i]
				b.Reset()
				if err := htmlTemplate.ExecuteTemplate(&b, "figures", in); err != nil {
					return fmt.Errorf("write the details of %s: %w", in.ID, err)
				}
				h.frags[i] = template.HTML(b.String()) // html/template's own output
			}
			return nil
		})
	}
	if err := eg.Wait(); err != nil {
		return nil, err
	}
	return h, nil
}

// Fragment returns the fragment of intent id.
func (h *IntentHTML) Fragment(id string) (template.HTML, error) {
	i, ok := h.byID[id]
	if !ok {
		return "", fmt.Errorf("the report has no intent %q", id)
	}
	return h.frags[i], nil
}

// HTMLPolicy is the Content-Security-Policy of every page of the report:
// nothing loads, nothing runs, no form goes anywhere; the inline style
// sheet (HTMLStyle, and the report site's own, allowed by StyleSource) and
// images from the site itself are all a page may use. WriteHTML puts it in
// the page; a server of the site sends it as a header too.
var HTMLPolicy = "default-src 'none'; style-src " + StyleSource(HTMLStyle) + "; img-src 'self'; base-uri 'none'; form-action 'none'"

// StyleSource is the CSP source that allows an inline style sheet whose
// text is exactly css.
func StyleSource(css string) string {
	sum := sha256.Sum256([]byte(css))
	return "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
}

type htmlPage struct {
	reportView
	SpeedNote    string
	HolmNote     string
	ScriptedNote string
	// IncompleteNote and ForcedNote go with an incomplete or forced run.
	IncompleteNote, ForcedNote string
	Forest                     *svgPlot
	SpeedPlot                  *svgPlot
	Policy                     string
	Style                      template.CSS
	Filters                    filters
	// Page holds each intent's page by anchor, when the site has one.
	Page map[string]string
	// Figures are the intents' fragments, in the report's order.
	Figures []template.HTML
	// Arms is the arms section of a run whose arms were configured.
	Arms template.HTML
}

// filters are the run page's choices: one per label present and one per
// outcome present, each with its count of intents.
type filters struct {
	Labels   []filterChoice
	Outcomes []filterChoice
	// Disagree counts intents with a pair where exactly one arm was
	// correct.
	Disagree int
}

type filterChoice struct {
	ID, Name string
	N        int
}

func newFilters(v reportView) filters {
	var f filters
	byLabel := map[string]int{}
	byOutcome := map[string]int{}
	for _, in := range v.Intents {
		byLabel[labelKey(in.Label)]++
		for _, o := range in.Outcomes {
			byOutcome[o]++
		}
		if in.Aborted {
			byOutcome[string(pairbench.Aborted)]++
		}
		if in.Discordant > 0 {
			f.Disagree++
		}
	}
	for _, l := range append(slices.Clone(pairbench.Labels), "") {
		if n := byLabel[labelKey(l)]; n > 0 {
			name := string(l)
			if l == "" {
				name = "unlabelled"
			}
			f.Labels = append(f.Labels, filterChoice{labelKey(l), name, n})
		}
	}
	for _, o := range pairbench.Outcomes {
		if n := byOutcome[string(o)]; n > 0 {
			f.Outcomes = append(f.Outcomes, filterChoice{string(o), string(o), n})
		}
	}
	return f
}

// labelKey names a label in CSS: its rank, or "x" for an unknown label.
func labelKey(l pairbench.Label) string {
	if r := l.Rank(); r >= 0 {
		return strconv.Itoa(r)
	}
	return "x"
}

// filterCSS hides what the filters leave out, and opens the folds a
// filter looks into. It is fixed (one rule per label and per outcome there
// can be), so the style sheet's hash is too.
func filterCSS() string {
	var b strings.Builder
	keys := []string{}
	for _, l := range pairbench.Labels {
		keys = append(keys, labelKey(l))
	}
	for _, k := range append(keys, "x") {
		fmt.Fprintf(&b, "body:has(#fl-%[1]s:checked) :is(.f-row, .f-group):not(.fl-%[1]s) { display: none; }\n", k)
	}
	for _, o := range pairbench.Outcomes {
		fmt.Fprintf(&b, "body:has(#fo-%[1]s:checked) .f-row:not(.fo-%[1]s), body:has(#fo-%[1]s:checked) .f-group:not(:has(.fo-%[1]s)) { display: none; }\n", o)
	}
	b.WriteString("body:has(#fd:checked) .f-row:not(.fd), body:has(#fd:checked) .f-group:not(:has(.fd)) { display: none; }\n")
	b.WriteString("body:has(.filters .narrow:checked) details.f-group::details-content { content-visibility: visible; display: block; }\n")
	b.WriteString("body:has(.filters .narrow:checked) details.f-group > summary { pointer-events: none; }\n")
	return b.String()
}

// HTMLStyle is the report's style sheet, shared by every page of the
// report site.
var HTMLStyle = baseCSS + filterCSS()

const baseCSS = `body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: #1f2328; margin: 1.5rem auto; max-width: 1400px; padding: 0 1rem; }
h1 { font-size: 1.5rem; margin: 0 0 .5rem; }
h2 { font-size: 1.2rem; border-bottom: 1px solid #d0d7de; padding-bottom: .2rem; margin-top: 2rem; }
table { border-collapse: collapse; margin: .5rem 0; }
th, td { border: 1px solid #d0d7de; padding: .25rem .5rem; text-align: left; vertical-align: top; }
th { background: #f6f8fa; }
td.num { text-align: right; }
a { color: #0969da; }
table.summary { width: 100%; table-layout: auto; }
table.summary td { overflow-wrap: anywhere; }
table.summary td small { display: block; color: #57606a; font-size: 12px; }
table.summary td.big { white-space: nowrap; }
code { font: 12px ui-monospace, SFMono-Regular, Menlo, monospace; background: #f6f8fa; padding: 0 .2rem; border-radius: 3px; overflow-wrap: anywhere; }
pre { font: 12px/1.4 ui-monospace, SFMono-Regular, Menlo, monospace; background: #f6f8fa; padding: .4rem .6rem; border-radius: 4px; white-space: pre-wrap; overflow-wrap: anywhere; margin: .25rem 0; max-height: 24rem; overflow-y: auto; }
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
dd { margin: 0; overflow-wrap: anywhere; }
.filters { display: flex; flex-wrap: wrap; gap: .25rem 1.25rem; align-items: baseline; border: 1px solid #d0d7de; border-radius: 6px; padding: .4rem .75rem; background: #f6f8fa; }
.filters fieldset { border: 0; margin: 0; padding: 0; }
.filters legend { float: left; font-weight: 600; margin-right: .4rem; }
.filters label { margin-right: .5rem; white-space: nowrap; }
svg { max-width: 100%; height: auto; }
svg text { font: 12px system-ui, sans-serif; fill: #1f2328; }
svg .grid { stroke: #d0d7de; }
svg .ref { stroke: #57606a; stroke-dasharray: 4 3; }
svg .iv { stroke-width: 2; }
svg .l-bad { stroke: #cf222e; fill: #cf222e; }
svg .l-meh { stroke: #6e7781; fill: #6e7781; }
svg .l-good { stroke: #1a7f37; fill: #1a7f37; }
svg .l-none { stroke: #6e7781; fill: #6e7781; }
`

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
			rows = append(rows, plotInput{in.ID, LabelClass(in.Label), in.Share, iv.Est, iv.Lo, iv.Hi})
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
		rows = append(rows, plotInput{in.ID, LabelClass(in.Label), in.Speedup, r.Est, r.Lo, r.Hi})
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

// LabelClass is the style class (of HTMLStyle) that colours label l: l-bad,
// l-meh, l-good, or l-none for no label.
func LabelClass(l pairbench.Label) string {
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
	"labelClass": LabelClass,
	"labelKey":   labelKey,
	"plural":     pluralize,
	"add":        func(a, b float64) float64 { return a + b },
	"rows":       summaryRows,
}).Parse(htmlSource))

// summaryRow is one intent of the summary table, with its page.
type summaryRow struct {
	Intent *intentView
	Page   string
}

// summaryRows are the rows of a summary table of intents on page p.
func summaryRows(p htmlPage, intents []*intentView) struct{ Rows []summaryRow } {
	rows := make([]summaryRow, len(intents))
	for i, in := range intents {
		rows[i] = summaryRow{in, p.Page[in.Anchor]}
	}
	return struct{ Rows []summaryRow }{rows}
}

// IntentPtrs are the page's intents in plan order.
func (p htmlPage) IntentPtrs() []*intentView {
	out := make([]*intentView, len(p.Intents))
	for i := range p.Intents {
		out[i] = &p.Intents[i]
	}
	return out
}

const htmlSource = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{{.Policy}}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>pairbench report {{.RunID}}</title>
<style>{{.Style}}</style>
</head>
<body>
<header>
{{if .Incomplete}}<h1>pairbench: incomplete run, no verdict: {{.Incomplete}}</h1>
<p class="warning"><strong>Not finished.</strong> {{.IncompleteNote}}</p>
<p>{{if .Total}}So far, worst label of {{.Total}} {{plural .Total "intent"}}: {{.Counts}}.{{else}}No intents in this run.{{end}}</p>
{{else}}<h1>pairbench verdict: <span class="label {{labelClass .Verdict}}">{{if .Verdict}}{{.Verdict}}{{else}}none{{end}}</span></h1>
{{with .Headline}}{{if .Suspect}}<p class="warning"><strong>Harness suspect:</strong> {{.Suspect}}.</p>
{{end}}{{if .Pooled}}<p>{{.Why}}{{if .Figures}} ({{.Figures}}){{end}}.</p>
{{end}}{{if .Claims}}<p>{{.Claims}}</p>
{{end}}{{end}}<p>{{if .Total}}{{if .Headline.Pooled}}Verdict {{.Headline.Pooled}}; per intent{{else}}Worst label of {{.Total}} {{plural .Total "intent"}}{{end}}: {{.Counts}}.{{else}}No intents in this run.{{end}}</p>{{end}}{{if .Forced}}
<div class="warning"><p><strong>Forced resume.</strong> {{.ForcedNote}}</p><ul>{{range .Forced}}<li>{{.}}</li>{{end}}</ul></div>{{end}}
{{if .Looks}}<p>{{.Looks}}</p>
{{end}}{{if .Scripted}}<p class="warning"><strong>Scripted model, not an LLM.</strong> {{.ScriptedNote}}</p>{{end}}
{{if .MixedWebMCP}}<p class="warning"><strong>Mixed WebMCP.</strong> {{.MixedWebMCP}}</p>
{{end}}<p>Run <code>{{.RunID}}</code>{{if .Agent}} · agent <code>{{.Agent}}</code>{{end}} · model <code>{{.Model}}</code>{{if .Source}} · registry {{.Source}}{{end}}</p>
{{.Arms}}</header>

<h2>Intents</h2>
{{if .Intents}}{{template "filters" .Filters}}{{end}}
{{if .Many}}<p>{{.Total}} intents by label, worst first; open a label for its intents{{if $.Page}}, and an intent for its pairs and trials{{end}}. A filter opens every label.</p>
{{range .Groups}}<details class="group f-group fl-{{labelKey .Label}}">
<summary><span class="label {{labelClass .Label}}">{{.Label}}</span> · {{len .Intents}} {{plural (len .Intents) "intent"}}</summary>
{{template "summary" (rows $ .Intents)}}
</details>
{{end}}{{else}}{{template "summary" (rows $ .IntentPtrs)}}
{{end}}<p class="note">{{.SpeedNote}} {{.HolmNote}}</p>

{{with .Forest}}{{if $.Many}}<details class="group"><summary>Plot: {{.Title}} ({{len .Rows}} intents)</summary>
{{template "plot" .}}</details>{{else}}{{template "plot" .}}{{end}}{{end}}
{{with .SpeedPlot}}{{if $.Many}}<details class="group"><summary>Plot: {{.Title}} ({{len .Rows}} intents)</summary>
{{template "plot" .}}</details>{{else}}{{template "plot" .}}{{end}}{{end}}

{{if .Intents}}<h2>Details</h2>
{{range $i, $in := .Intents}}<details id="{{$in.Anchor}}" class="{{template "fclass" $in}}">
<summary><code>{{$in.ID}}</code> · <span class="label {{labelClass $in.Label}}">{{$in.Label}}</span>{{if $in.Placebo}} · placebo{{end}}{{with index $.Page $in.Anchor}} · <a href="{{.}}">pairs and trials</a>{{end}}</summary>
{{index $.Figures $i}}
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
{{define "fclass"}}f-row fl-{{labelKey .Label}}{{range .Outcomes}} fo-{{.}}{{end}}{{if .Aborted}} fo-aborted{{end}}{{if .Discordant}} fd{{end}}{{end}}
{{define "filters"}}<form class="filters" aria-label="Filters">
<fieldset><legend>Label</legend><input type="radio" name="fl" id="fl-all" checked><label for="fl-all">all</label>{{range .Labels}}<input class="narrow" type="radio" name="fl" id="fl-{{.ID}}"><label for="fl-{{.ID}}">{{.Name}} ({{.N}})</label>{{end}}</fieldset>
<fieldset><legend>Trials</legend><input type="radio" name="fo" id="fo-all" checked><label for="fo-all">any</label>{{range .Outcomes}}<input class="narrow" type="radio" name="fo" id="fo-{{.ID}}"><label for="fo-{{.ID}}">some {{.Name}} ({{.N}})</label>{{end}}</fieldset>
<fieldset><input class="narrow" type="checkbox" id="fd"><label for="fd">pairs where the arms disagree ({{.Disagree}} {{plural .Disagree "intent"}})</label></fieldset>
</form>{{end}}
{{define "figures"}}<dl>
{{range .Facts}}<dt>{{.Name}}</dt><dd>{{.Text}}</dd>
{{end}}</dl>
<table>
<tr><th></th><th>control</th><th>treatment</th></tr>
{{range .Arms}}<tr><th>{{.Name}}</th><td>{{.Control}}</td><td>{{.Treatment}}</td></tr>
{{end}}</table>{{end}}
{{define "summary"}}<table class="summary">
<tr><th>intent</th><th>label</th><th>pairs</th><th>correct: control → treatment</th><th>Δ accuracy (discordant pairs won by treatment, Holm p)</th><th>speedup (Holm p)</th><th>adoption</th></tr>
{{range .Rows}}{{$in := .Intent}}<tr class="{{template "fclass" $in}}"><td><a href="{{if .Page}}{{.Page}}{{else}}#{{$in.Anchor}}{{end}}"><code>{{$in.ID}}</code></a></td><td><span class="label {{labelClass $in.Label}}">{{$in.Label}}</span>{{if $in.Placebo}} <small>placebo</small>{{end}}</td><td class="num">{{$in.N}}{{if gt $in.Planned $in.N}}<small>of {{$in.Planned}}</small>{{end}}</td><td class="big">{{$in.ControlPct}} → {{$in.TreatmentPct}}<small>{{$in.ControlCount}} · {{$in.TreatmentCount}}</small></td><td>{{$in.Delta}}<small>{{$in.Share}} · p {{$in.PAccuracy}}</small></td><td>{{$in.Speedup}}<small>p {{$in.PSpeed}}</small></td><td>{{$in.AdoptionPct}}<small>{{$in.AdoptionCount}}</small></td></tr>
{{end}}</table>{{end}}{{define "plot"}}<h2>{{.Title}}</h2>
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
