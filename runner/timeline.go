package runner

import (
	"context"
	"time"
)

// The files of a trial directory (TrialDir), each written by the trial.
const (
	// TrialSetup is the browser setup (Setup), or the failures that aborted
	// the trial.
	TrialSetup = "setup.json"
	// TrialTranscript is the agent's event stream, secrets redacted, in the
	// agent's own format.
	TrialTranscript = "transcript.jsonl"
	// TrialWebMCP holds the webmcp invocations, one JSON object a line (the
	// row's webmcp entries).
	TrialWebMCP = "webmcp.jsonl"
	// TrialTimeline is when each step of the trial happened (Timeline).
	TrialTimeline = "timeline.json"
	// TrialScreenshot is the page at the end of the trial, a PNG of
	// ScreenshotWidth × ScreenshotHeight.
	TrialScreenshot = "screenshot.png"
	// TrialRefusals holds the browser egress's refusals, one JSON object a
	// line (Refusal), written only when there were any.
	TrialRefusals = "browser-refusals.jsonl"
)

// ScreenshotWidth and ScreenshotHeight are the size, in CSS pixels at
// scale 1, of every trial's end-of-trial screenshot, in both arms.
const (
	ScreenshotWidth  = 1280
	ScreenshotHeight = 800
)

// Screenshotter is implemented by a Browser that can show its page. The
// trial calls Screenshot once the agent has ended, in both arms, before
// anything else touches the browser.
type Screenshotter interface {
	// Screenshot returns a PNG of the current page (the tab LiveTools
	// lists) as it is, laid out at ScreenshotWidth × ScreenshotHeight.
	Screenshot(ctx context.Context) ([]byte, error)
}

// Timeline is when each step of a trial happened, as timeline.json records
// it: milliseconds since the trial started, on the runner's clock.
type Timeline struct {
	// StartedAt is when the trial started.
	StartedAt time.Time `json:"started_at"`
	// Marks are the steps the trial reached, in order (see the Step
	// constants).
	Marks []Mark `json:"marks"`
	// Transcript holds, for each line of transcript.jsonl in order, when
	// the agent wrote it.
	Transcript []int64 `json:"transcript_ms,omitempty"`
	// WebMCP holds, for each line of webmcp.jsonl in order, when that
	// invocation began; its duration is the line's ms.
	WebMCP []int64 `json:"webmcp_ms,omitempty"`
}

// Mark is one step of a trial and when it was reached.
type Mark struct {
	Step string `json:"step"`
	AtMS int64  `json:"at_ms"`
}

// The steps a Timeline marks, in the order a trial reaches them. Setup
// begins at 0. Only the browser that passed setup is marked: the time
// before StepBrowserOpening went to browsers that failed (setup.json says
// why).
const (
	StepSetup           = "setup"            // the trial began its browser setup
	StepBrowserOpening  = "browser_opening"  // the browser that passed setup was asked for
	StepBrowserOpen     = "browser_open"     // it was open, with a blank tab
	StepToolsRegistered = "tools_registered" // treatment only: the domain's tools were registered
	StepPageLoaded      = "page_loaded"      // the start page had loaded
	StepSetupDone       = "setup_done"       // the page was checked (tools live, or none in control)
	StepAgentLaunched   = "agent_launched"   // the start delay after page_loaded was over; the agent was launched
	StepFirstTurn       = "first_turn"       // the agent began its first model turn (its first model request)
	StepAgentEnded      = "agent_ended"      // the agent exited, or was stopped at a cap
	StepScreenshot      = "screenshot"       // screenshot.png was taken
	StepEnd             = "end"              // the trial's row was complete
)

// timeline records a trial's steps as they happen.
type timeline struct {
	start time.Time
	t     Timeline
}

func newTimeline(start time.Time) *timeline {
	return &timeline{start: start, t: Timeline{StartedAt: start.UTC()}}
}

func (tl *timeline) ms(at time.Time) int64 { return at.Sub(tl.start).Milliseconds() }

// mark records step at at.
func (tl *timeline) mark(step string, at time.Time) {
	tl.t.Marks = append(tl.t.Marks, Mark{Step: step, AtMS: tl.ms(at)})
}

// setup marks the steps of the browser that passed setup, which ended at
// done: its timing says how long each step took.
func (tl *timeline) setup(s *Setup, arm string, done time.Time) {
	at := done.Add(-s.Timing.Total())
	tl.mark(StepBrowserOpening, at)
	at = at.Add(s.Timing.Open)
	tl.mark(StepBrowserOpen, at)
	if arm == "treatment" {
		at = at.Add(s.Timing.Register)
		tl.mark(StepToolsRegistered, at)
	}
	at = at.Add(s.Timing.Load)
	if !s.Load.LoadedAt.IsZero() {
		at = s.Load.LoadedAt
	}
	tl.mark(StepPageLoaded, at)
	tl.mark(StepSetupDone, done)
}

func (tl *timeline) times(ts []time.Time) []int64 {
	out := make([]int64, len(ts))
	for i, at := range ts {
		out[i] = tl.ms(at)
	}
	return out
}
