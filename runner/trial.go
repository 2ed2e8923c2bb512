package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/pairbench/pairbench/rundir"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/grade"
	"github.com/pairbench/pairbench/intents"
	"github.com/pairbench/pairbench/runner/webmcp"
)

// BrowserTools are the browser-control tools (Playwright MCP's) every agent
// may call, in both arms. Tools that run arbitrary page JavaScript
// (browser_evaluate, browser_run_code_unsafe) are left out: through them an
// agent could reach the page's WebMCP tools without pairbench seeing it.
var BrowserTools = []string{
	"browser_navigate", "browser_navigate_back", "browser_snapshot", "browser_find",
	"browser_click", "browser_type", "browser_fill_form", "browser_select_option",
	"browser_press_key", "browser_hover", "browser_wait_for", "browser_tabs",
	"browser_take_screenshot", "browser_handle_dialog",
}

// Allowlist returns the tools declared to the model in both arms: the
// browser-control tools of the MCP server named browser, and pairbench's
// webmcp tool.
func Allowlist() []string {
	var names []string
	for _, t := range BrowserTools {
		names = append(names, "mcp__browser__"+t)
	}
	return append(names, "mcp__"+webmcp.ServerName+"__"+webmcp.ToolName)
}

// SystemPrompt is appended to the agent's own in both arms. Like the
// guidance site owners give their agents, it says to look for the page's
// tools first; it never says whether any are registered.
const SystemPrompt = `You operate a web browser to complete the user's task.
First list the current page's WebMCP tools with the webmcp tool; if one fits the task, invoke it.
Otherwise, or if it fails, use the browser tools to read and operate the page.
Never check out, pay, place an order, book, or add to a cart unless the task says so.
End with your answer as a JSON object in a fenced code block.`

// TrialIntent is an intent ready to run: resolved, compiled and with the
// tools treatment registers.
type TrialIntent struct {
	Intent intents.Intent
	Grader *grade.Grader
	// Tools are registered in treatment, ControlTools in control (none
	// unless the run's control arm registers tools: tools@REV).
	Tools        []intents.Tool
	ControlTools []intents.Tool
	// Context is the context pack each arm's agent is given, in
	// pairbench.Arms order, when an arm of the run has context (Contexted);
	// the other arm's is "". See ArmPrompt.
	Context   [2]string
	Contexted bool
	Browser   BrowserSpec
	// SignedInCheck is the domain's signed_in_check tool, run in every
	// setup of both arms; nil when the domain has none.
	SignedInCheck *intents.Tool
}

// BrowserMCPFunc returns the browser-control MCP server for a browser's CDP
// endpoint (Playwright MCP, started by the agent inside its sandbox).
type BrowserMCPFunc func(cdpURL string) MCPServer

// Trials runs single trials. Both arms of every pair go through the same
// code; only the tools registered in the browser differ.
type Trials struct {
	RunDir   rundir.RunDir
	Plan     *rundir.Plan
	Intents  map[string]*TrialIntent
	Browsers Browsers
	Agent    Agent
	// BrowserMCP gives the agent its browser-control server.
	BrowserMCP BrowserMCPFunc
	// StartDelay is how long after the start page loaded the agent starts,
	// in both arms.
	StartDelay    time.Duration
	SetupAttempts int
	Log           *slog.Logger
	// OnAgent, if set, sees each trial once its agent began its first
	// turn (from the agent adapter's goroutine).
	OnAgent func(TrialSpec)
	// Judge scores the answers of judged intents (Plan.Judge's model).
	Judge Judge
}

// Run runs one trial and returns its row. Every failure of the trial
// itself is an outcome in the row; the error is ErrInterrupted (wrapped)
// when ctx ended before the trial could finish.
func (t *Trials) Run(ctx context.Context, spec TrialSpec) (pairbench.Row, error) {
	started := time.Now()
	row := pairbench.Row{
		V: pairbench.RowVersion, RunID: t.Plan.RunID, Intent: spec.Job.Intent, Domain: spec.Job.Domain,
		Stage: spec.Job.Stage, Pair: spec.Job.Pair, Order: spec.Job.Order, Arm: spec.Arm,
		Attempt: spec.Job.Attempt, TrialDir: spec.Dir, StartedAt: started.UTC().Format(time.RFC3339),
	}
	if row.Stage == pairbench.StageAdoption {
		row.Order = ""
	}
	abort := func(reason string) (pairbench.Row, error) {
		if ctx.Err() != nil {
			return row, fmt.Errorf("%s: %w", spec.Dir, ErrInterrupted)
		}
		if strings.Contains(reason, syscall.ENOSPC.Error()) || strings.Contains(reason, syscall.EDQUOT.Error()) {
			// The runs directory is full: no trial can be recorded, and
			// every one would abort. A fault, not the trial's outcome.
			return row, fmt.Errorf("%s: %w: %s", spec.Dir, ErrDiskFull, reason)
		}
		row.Outcome, row.Reason = pairbench.Aborted, reason
		row.WallSeconds = time.Since(started).Seconds()
		return row, nil
	}
	in := t.Intents[spec.Job.Intent]
	if in == nil {
		// A job of an intent the trials were not given: a fault of the
		// caller, never an outcome of the trial.
		return row, fmt.Errorf("%s: intent %s is not among the trials' intents", spec.Dir, spec.Job.Intent)
	}
	dir := t.RunDir.File(spec.Dir)
	// A trial interrupted before its row was written may have left its
	// directory behind; this attempt owns it now.
	if err := os.RemoveAll(dir); err != nil {
		return abort("runner error: " + err.Error())
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return abort("runner error: " + err.Error())
	}

	tl := newTimeline(started)
	tl.mark(rundir.StepSetup, time.Now())
	// Whatever the trial reached is on its timeline, however it ends.
	defer func() {
		tl.mark(rundir.StepEnd, time.Now())
		t.save(filepath.Join(dir, rundir.TrialTimeline), tl.t)
	}()

	setupSpec := SetupSpec{Arm: spec.Arm, StartURL: in.Intent.StartURL, EntryTool: in.Intent.EntryTool,
		Browser: in.Browser, SignedInCheck: in.SignedInCheck, Attempts: t.SetupAttempts}
	setupSpec.Tools = in.ArmTools(spec.Arm)
	if spec.Arm == pairbench.Control && !slices.ContainsFunc(setupSpec.Tools, func(t intents.Tool) bool { return t.Name == in.Intent.EntryTool }) {
		setupSpec.EntryTool = "" // a tools@REV control from before the entry tool
	}
	setup, err := SetUpBrowser(ctx, t.log(), t.Browsers, setupSpec)
	if err != nil {
		var se *SetupError
		if errors.As(err, &se) {
			t.save(filepath.Join(dir, rundir.TrialSetup), map[string]any{"failures": se.Failures})
			row.Unregistered = onePerTool(se.Unregistered)
			return abort("setup: " + se.Reason())
		}
		return abort("setup: " + err.Error())
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), closeTimeout)
		defer cancel()
		if err := setup.Browser.Close(cctx); err != nil {
			t.log().Error("close browser", "trial", spec.Dir, "err", err)
		}
	}()
	tl.setup(setup, string(spec.Arm), time.Now())
	row.NativeTools = setup.Native
	row.WebMCPImpl = setup.WebMCP
	row.WebMCPEnv = setup.Env
	t.save(filepath.Join(dir, rundir.TrialSetup), setup)

	tools := webmcp.New(setup.Browser, webmcp.Options{Log: t.log()})
	if err := tools.Start(); err != nil {
		return abort("runner error: " + err.Error())
	}
	defer tools.Close()

	// The same delay after page load in both arms, so registration never
	// gives treatment's page longer to settle.
	if wait := time.Until(setup.Load.LoadedAt.Add(t.StartDelay)); wait > 0 {
		select {
		case <-ctx.Done():
			return row, fmt.Errorf("%s: %w", spec.Dir, ErrInterrupted)
		case <-time.After(wait):
		}
	}
	launched := time.Now()
	tl.mark(rundir.StepAgentLaunched, launched)
	row.StartDelayMS = launched.Sub(setup.Load.LoadedAt).Milliseconds()

	devtools := setup.Browser.DevTools()
	browserMCP := t.BrowserMCP(devtools.URL)
	task := AgentTask{
		Prompt:         in.ArmPrompt(spec.Arm),
		SystemPrompt:   SystemPrompt,
		Model:          t.Plan.Model,
		MCPServers:     []MCPServer{browserMCP, {Name: webmcp.ServerName, URL: tools.URL()}},
		LoopbackPorts:  []int{tools.Port()},
		Allowlist:      t.Plan.Allowlist,
		Caps:           CapsOf(t.Plan.Caps),
		Dir:            filepath.Join(dir, "agent"),
		TranscriptPath: filepath.Join(dir, rundir.TrialTranscript),
		StepsPath:      filepath.Join(dir, rundir.TrialSteps),
		Start:          tl.start,
	}
	if devtools.Socket != "" {
		task.Sockets = map[int]string{devtools.Port: devtools.Socket}
	}
	prestarter, _ := setup.Browser.(Prestarter)
	firstTurn := make(chan time.Time, 1)
	task.Started = func() {
		select {
		case firstTurn <- time.Now():
		default:
		}
		if prestarter != nil {
			prestarter.AgentRunning()
		}
		if t.OnAgent != nil {
			t.OnAgent(spec)
		}
	}
	res, err := t.Agent.Run(ctx, task)
	ended := time.Now()
	row.WallSeconds = ended.Sub(launched).Seconds()
	select {
	case at := <-firstTurn:
		tl.mark(rundir.StepFirstTurn, at)
		row.StartupSeconds = at.Sub(launched).Seconds()
	default:
	}
	tl.mark(rundir.StepAgentEnded, ended)
	tl.t.Transcript = tl.times(res.TranscriptTimes)
	if ctx.Err() != nil {
		return row, fmt.Errorf("%s: %w", spec.Dir, ErrInterrupted)
	}
	// The page as the agent left it, at the same moment and size in both
	// arms.
	t.screenshot(ctx, setup.Browser, filepath.Join(dir, rundir.TrialScreenshot), tl)
	page, pageProblem := t.finalPage(ctx, setup.Browser, in, dir)
	_ = os.RemoveAll(task.Dir)
	tools.Close()
	if len(setupSpec.Tools) > 0 {
		failed, ferr := setup.Browser.RegistrationFailures(ctx)
		if ferr != nil {
			t.log().Warn("read registration failures", "trial", spec.Dir, "err", ferr)
		}
		row.Unregistered = onePerTool(failed)
	}
	t.saveRefusals(dir, setup.Browser, &row)
	row.WebMCP = tools.Invocations()
	tl.t.WebMCP = tl.times(tools.Starts())
	t.save(filepath.Join(dir, rundir.TrialWebMCP), row.WebMCP)
	for _, inv := range row.WebMCP {
		row.Adopted = row.Adopted || inv.Registered
	}
	if mismatch := CheckBrowserCalls(setup.Browser, setup, &row); mismatch != "" {
		return abort(mismatch)
	}

	row.Turns, row.InputTokens, row.OutputTokens, row.CostUSD = res.Turns, res.InputTokens, res.OutputTokens, res.Cost
	row.ToolsDeclared = res.Declared
	if res.CapHit != "" {
		row.CapsHit = []pairbench.Cap{res.CapHit}
	}
	if err != nil {
		// The agent could not be run or observed: nothing it did is known.
		row.Error = err.Error()
		return abort("agent: " + err.Error())
	}
	if pageProblem != "" {
		return abort(pageProblem)
	}
	facts := grade.Facts{
		Allowlist: t.Plan.Allowlist, ToolsDeclared: res.Declared,
		OutsideCalls: outsideCalls(res.Calls, t.Plan.Allowlist),
		StopReason:   res.StopReason, ErrorMessage: res.ErrorMessage,
		ProviderGaveUp: res.ProviderGaveUp, CapHit: res.CapHit,
		Costs: costs(res),
	}
	facts.Grade = in.Grader.Grade(res.Final)
	if page != nil {
		facts.Grade = grade.GradePage(in.Intent.Checks, *page, facts.Grade)
	}
	row.Answer = pairbench.Answer{Raw: res.Final, Extracted: facts.Grade.Extracted}
	row.Outcome, row.Reason = grade.Classify(facts)
	if in.Intent.Judged() && row.Outcome == pairbench.Correct {
		var why string
		if facts.Grade, why = t.judge(ctx, in, page, facts.Grade, dir, &row); why != "" {
			return abort(why)
		}
		row.Outcome, row.Reason = grade.Classify(facts)
	}
	if row.Error == "" && res.ErrorMessage != "" {
		row.Error = res.ErrorMessage
	}
	return row, nil
}

// ErrDiskFull stops a run whose disk is full: its trials can be neither
// kept nor recorded. The rows file keeps its last whole row; a resume once
// there is space again runs the rest.
var ErrDiskFull = errors.New("no space left for the run")

// maxUnregistered bounds the registration failures a row keeps.
const maxUnregistered = 20

// onePerTool keeps the first failure of each tool and message (the page it
// was seen on first), at most maxUnregistered of them.
func onePerTool(failures []pairbench.RegistrationFailure) []pairbench.RegistrationFailure {
	var out []pairbench.RegistrationFailure
	for _, f := range failures {
		if len(out) == maxUnregistered {
			break
		}
		if !slices.ContainsFunc(out, func(g pairbench.RegistrationFailure) bool { return g.Tool == f.Tool && g.Error == f.Error }) {
			out = append(out, f)
		}
	}
	return out
}

// outsideCalls names the successful calls of tools outside the allowlist.
func outsideCalls(calls []ToolCall, allow []string) []string {
	var out []string
	for _, c := range calls {
		if !c.IsError && !slices.Contains(allow, c.Name) {
			out = append(out, c.Name)
		}
	}
	return out
}

// costs gives grade the costs the agent reported, as it classifies them:
// none at all, or one missing, crashes the trial.
func costs(res AgentResult) []any {
	switch {
	case res.CostMissing:
		return []any{nil}
	case res.Turns == 0:
		return nil
	default:
		return []any{res.Cost}
	}
}

// saveRefusals counts the browser's egress refusals in the row and, when
// there are any, writes them to the trial's browser-refusals.jsonl.
func (t *Trials) saveRefusals(dir string, b Browser, row *pairbench.Row) {
	r, ok := b.(RefusalReporter)
	if !ok {
		return
	}
	refusals, total := r.Refusals()
	row.BrowserRefusals = total
	if len(refusals) == 0 {
		return
	}
	t.save(filepath.Join(dir, rundir.TrialRefusals), refusals)
}

// screenshotTimeout bounds the end-of-trial screenshot.
const screenshotTimeout = 15 * time.Second

// screenshot writes a PNG of b's page to name when b can take one. A
// screenshot that fails is logged: the row still records the trial.
func (t *Trials) screenshot(ctx context.Context, b Browser, name string, tl *timeline) {
	s, ok := b.(Screenshotter)
	if !ok {
		return
	}
	sctx, cancel := context.WithTimeout(ctx, screenshotTimeout)
	defer cancel()
	png, err := s.Screenshot(sctx)
	if err == nil {
		err = os.WriteFile(name, png, 0o644)
	}
	if err != nil {
		t.log().Warn("end-of-trial screenshot", "file", name, "err", err)
		return
	}
	tl.mark(rundir.StepScreenshot, time.Now())
}

// log returns the logger, discarding when none was given. Run is called
// from every slot at once, so it never writes to t.
func (t *Trials) log() *slog.Logger {
	if t.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return t.Log
}

// save writes a trial file: v as indented JSON, or a slice of
// invocations or refusals as JSON lines. A file that cannot be written is logged; the
// row still records the trial.
func (t *Trials) save(name string, v any) {
	var b []byte
	var err error
	if lines, ok := jsonLines(v); ok {
		b = lines
	} else if b, err = json.MarshalIndent(v, "", "  "); err == nil {
		b = append(b, '\n')
	}
	if err == nil {
		err = os.WriteFile(name, b, 0o644)
	}
	if err != nil {
		t.log().Error("write trial file", "file", name, "err", err)
	}
}

// jsonLines encodes the record lists trial files hold one per line.
func jsonLines(v any) ([]byte, bool) {
	var items []any
	switch v := v.(type) {
	case []pairbench.Invocation:
		for _, x := range v {
			items = append(items, x)
		}
	case []Refusal:
		for _, x := range v {
			items = append(items, x)
		}
	default:
		return nil, false
	}
	var b []byte
	for _, x := range items {
		line, _ := json.Marshal(x)
		b = append(append(b, line...), '\n')
	}
	return b, true
}
