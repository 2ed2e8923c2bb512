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
		Head:           PageHead{Title: "pairbench report " + v.RunID, Policy: HTMLPolicy, Style: template.CSS(HTMLStyle)},
		Forest:         sharePlot(v.Intents),
		SpeedPlot:      speedPlot(v.Intents),
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
	Head                       PageHead
	Forest                     *svgPlot
	SpeedPlot                  *svgPlot
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
// filter looks into: templates/filters.css.tmpl's "run filters", for every
// label there can be (and "x", an unknown one) and every outcome.
func filterCSS() string {
	var choices struct{ Labels, Outcomes []string }
	for _, l := range pairbench.Labels {
		choices.Labels = append(choices.Labels, labelKey(l))
	}
	choices.Labels = append(choices.Labels, "x")
	for _, o := range pairbench.Outcomes {
		choices.Outcomes = append(choices.Outcomes, string(o))
	}
	return StyleRules("run filters", choices)
}

// HTMLStyle is the report's style sheet, shared by every page of the
// report site.
var HTMLStyle = baseCSS + filterCSS()

// baseCSS is the report's own rules, templates/report.css.
var baseCSS = templateFile("report.css")

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

// htmlTemplate is report.html, templates/report.html.tmpl.
var htmlTemplate = template.Must(ParsePages(template.New("report.html.tmpl").Funcs(template.FuncMap{
	"labelClass": LabelClass,
	"labelKey":   labelKey,
	"plural":     pluralize,
	"add":        func(a, b float64) float64 { return a + b },
	"rows":       summaryRows,
}), "report.html.tmpl"))

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
