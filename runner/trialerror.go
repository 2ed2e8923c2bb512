package runner

import (
	"errors"
	"syscall"
)

// TrialStep names a step of a trial (Trials.Run), or of its recording
// (Execution).
type TrialStep string

// The steps of a trial, in the order they are taken.
const (
	// TrialDirStep makes the trial's directory afresh.
	TrialDirStep TrialStep = "trial directory"
	// SetupStep opens a fresh browser, registers the arm's tools and loads
	// the start page (SetUpBrowser).
	SetupStep TrialStep = "browser setup"
	// ToolServerStep starts the trial's MCP server, the agent's webmcp
	// tool.
	ToolServerStep TrialStep = "webmcp server"
	// AgentStep runs the agent on the task (Agent.Run).
	AgentStep TrialStep = "agent"
	// BrowserCallsStep checks the calls the browser's own WebMCP saw
	// against the webmcp tool's (CheckBrowserCalls).
	BrowserCallsStep TrialStep = "browser calls"
	// FinalPageStep reads the page the agent left, for the intent's checks
	// and its judge.
	FinalPageStep TrialStep = "final page"
	// JudgeStep asks the run's judge about a judged intent's answer.
	JudgeStep TrialStep = "judge"
	// RowStep appends the trial's row to the rows file.
	RowStep TrialStep = "row"
)

// TrialError is a step of a trial that failed. Trials.Run records it as
// an aborted trial whose reason is the error's text; a trial whose step
// met a full disk, and a row that could not be appended, stop the run
// with it instead (wrapped, see ErrDiskFull).
type TrialError struct {
	Step TrialStep
	Err  error
}

// Error is the reason an aborted trial's row gives: the step's words
// (runner error for the trial's own directory and server, setup, agent)
// and its error. A browser setup that failed on every browser it tried
// gives the last one's failure (SetupError.Reason); the browser calls,
// final page and judge steps' errors, and the row's, say what they are.
func (e *TrialError) Error() string {
	switch e.Step {
	case TrialDirStep, ToolServerStep:
		return "runner error: " + e.Err.Error()
	case SetupStep:
		var se *SetupError
		if errors.As(e.Err, &se) {
			return "setup: " + se.Reason()
		}
		return "setup: " + e.Err.Error()
	case AgentStep:
		return "agent: " + e.Err.Error()
	}
	return e.Err.Error()
}

func (e *TrialError) Unwrap() error { return e.Err }

// ErrDiskFull stops a run whose disk is full: its trials can be neither
// kept nor recorded. The rows file keeps its last whole row; a resume once
// there is space again runs the rest.
var ErrDiskFull = errors.New("no space left for the run")

// DiskFull reports whether err is, or wraps, the system's word for a full
// disk: no space left on the device (ENOSPC), or the user's quota
// exceeded (EDQUOT).
func DiskFull(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}
