package viewer

import (
	"fmt"
	"math"
	"strconv"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/rundir"
)

// pairedPlot is an intent's paired plot: two axes of wall time, control's
// on the left and treatment's on the right, and one line per complete pair
// from its control trial's time to its treatment trial's, coloured by how
// the arms' outcomes compare. A line links to its pair's page.
type pairedPlot struct {
	Width, Height       int
	ControlX, TreatX    float64
	Top, Bottom         float64
	Ticks               []plotTick
	Lines               []plotLine
	Shown, Incomplete   int
	TreatFaster, Slower int
}

type plotTick struct {
	Y     float64
	Label string
}

type plotLine struct {
	Y1, Y2   float64
	Class    pairClass
	Disagree bool
	Title    string
	Href     string
}

const (
	plotWidth  = 420
	plotHeight = 300
	plotTop    = 16
	plotBottom = 270
)

// newPairedPlot lays out pairs; with linked, each line links to its pair's
// page in dir (relative to the intent page).
func newPairedPlot(pairs []*pairSlot, dir string, linked bool) *pairedPlot {
	p := &pairedPlot{Width: plotWidth, Height: plotHeight, ControlX: 120, TreatX: 330, Top: plotTop, Bottom: plotBottom}
	top := 0.0
	for _, s := range pairs {
		if !s.complete() {
			p.Incomplete++
			continue
		}
		top = math.Max(top, math.Max(s.last[0].wall, s.last[1].wall))
	}
	if p.Incomplete == len(pairs) {
		return p
	}
	step := niceStep(top)
	top = math.Max(step, math.Ceil(top/step)*step)
	y := func(s float64) float64 { return round1(plotBottom - (plotBottom-plotTop)*s/top) }
	for v := 0.0; v <= top+step/2; v += step {
		p.Ticks = append(p.Ticks, plotTick{y(v), strconv.FormatFloat(v, 'g', -1, 64) + " s"})
	}
	for _, s := range pairs {
		if !s.complete() {
			continue
		}
		c, t := s.last[0], s.last[1]
		l := plotLine{Y1: y(c.wall), Y2: y(t.wall), Class: s.class(), Disagree: s.disagree(),
			Title: "pair " + strconv.Itoa(s.Pair) + ": control " + string(c.Outcome()) + " " + seconds(c.wall) +
				" → treatment " + string(t.Outcome()) + " " + seconds(t.wall)}
		if linked {
			l.Href = fmt.Sprintf("%s/%d.html", dir, s.Pair)
		}
		switch {
		case t.wall < c.wall:
			p.TreatFaster++
		case t.wall > c.wall:
			p.Slower++
		}
		p.Lines = append(p.Lines, l)
	}
	p.Shown = len(p.Lines)
	return p
}

// niceStep is a tick step of 1, 2 or 5 times a power of ten that cuts
// [0, top] into at most six parts.
func niceStep(top float64) float64 {
	if top <= 0 {
		return 1
	}
	mag := math.Pow(10, math.Floor(math.Log10(top/6)))
	for _, m := range []float64{1, 2, 5, 10} {
		if top/(m*mag) <= 6 {
			return m * mag
		}
	}
	return 10 * mag
}

func round1(x float64) float64 { return math.Round(x*10) / 10 }

// timelineView is a trial's timeline: a bar of its phases (setup, the start
// delay, the agent, the end), ticks where each transcript line was written
// and a box for each WebMCP invocation, and the table of its steps.
type timelineView struct {
	Width   int
	TotalMS int64
	Phases  []tlPhase
	Lines   []float64
	Calls   []tlCall
	Marks   []tlMark
}

type tlPhase struct {
	X, W  float64
	Class string
	Title string
}

type tlCall struct {
	X, W  float64
	Title string
	Error bool
}

type tlMark struct {
	Name string
	At   string
	Gap  string
}

const timelineWidth = 440

// stepNames says what each timeline step means, in the page's words.
var stepNames = map[string]string{
	rundir.StepSetup:           "setup began",
	rundir.StepBrowserOpening:  "browser asked for",
	rundir.StepBrowserOpen:     "browser open",
	rundir.StepToolsRegistered: "tools registered",
	rundir.StepPageLoaded:      "start page loaded",
	rundir.StepSetupDone:       "setup checked",
	rundir.StepAgentLaunched:   "agent launched (start delay over)",
	rundir.StepFirstTurn:       "first model request",
	rundir.StepAgentEnded:      "agent ended",
	rundir.StepScreenshot:      "screenshot taken",
	rundir.StepEnd:             "row complete",
}

func newTimelineView(tl *rundir.Timeline, row *pairbench.Row) *timelineView {
	v := &timelineView{Width: timelineWidth}
	at := map[string]int64{}
	for _, m := range tl.Marks {
		v.TotalMS = max(v.TotalMS, m.AtMS)
		at[m.Step] = m.AtMS
	}
	for _, ms := range tl.Transcript {
		v.TotalMS = max(v.TotalMS, ms)
	}
	if v.TotalMS <= 0 {
		v.TotalMS = 1
	}
	x := func(ms int64) float64 {
		return round1(float64(timelineWidth-2) * float64(min(max(ms, 0), v.TotalMS)) / float64(v.TotalMS))
	}
	phase := func(from, to, class, title string) {
		a, okA := at[from]
		b, okB := at[to]
		if okA && okB && b >= a {
			v.Phases = append(v.Phases, tlPhase{X: x(a), W: math.Max(1, x(b)-x(a)), Class: class,
				Title: fmt.Sprintf("%s: %s", title, millis(b-a))})
		}
	}
	phase(rundir.StepSetup, rundir.StepSetupDone, "ph-setup", "setup")
	phase(rundir.StepSetupDone, rundir.StepAgentLaunched, "ph-delay", "start delay")
	phase(rundir.StepAgentLaunched, rundir.StepAgentEnded, "ph-agent", "agent")
	phase(rundir.StepAgentEnded, rundir.StepEnd, "ph-end", "screenshot and grading")
	for _, ms := range tl.Transcript {
		v.Lines = append(v.Lines, x(ms))
	}
	for i, ms := range tl.WebMCP {
		c := tlCall{X: x(ms), W: 2}
		if i < len(row.WebMCP) {
			inv := row.WebMCP[i]
			c.W = math.Max(2, x(ms+inv.MS)-x(ms))
			c.Title = fmt.Sprintf("%s %s, %d ms", inv.Tool, inv.Status, inv.MS)
			c.Error = inv.Status != "ok"
		}
		v.Calls = append(v.Calls, c)
	}
	prev := int64(0)
	for i, m := range tl.Marks {
		name := stepNames[m.Step]
		if name == "" {
			name = m.Step
		}
		mk := tlMark{Name: name, At: millis(m.AtMS)}
		if i > 0 {
			mk.Gap = "+" + millis(m.AtMS-prev)
		}
		prev = m.AtMS
		v.Marks = append(v.Marks, mk)
	}
	return v
}

// millis shows a duration given in milliseconds.
func millis(ms int64) string {
	if ms < 1000 && ms > -1000 {
		return fmt.Sprintf("%d ms", ms)
	}
	return fmt.Sprintf("%.2f s", float64(ms)/1000)
}
