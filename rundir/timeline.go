package rundir

import (
	"time"
)

// The files of a trial directory (TrialDir), each written by the trial.
const (
	// TrialSetup is the browser setup (runner.Setup), or the failures that aborted
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
	// line (runner.Refusal), written only when there were any.
	TrialRefusals = "browser-refusals.jsonl"
)

// ScreenshotWidth and ScreenshotHeight are the size, in CSS pixels at
// scale 1, of every trial's end-of-trial screenshot, in both arms.
const (
	ScreenshotWidth  = 1280
	ScreenshotHeight = 800
)

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
