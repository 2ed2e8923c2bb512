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

// Run runs one trial and returns its row. It takes the trial's steps in
// order (TrialStep): the trial directory, the browser's setup (the arm's
// tools registered), the webmcp server, the agent, the browser's calls,
// the final page, the grade and, for a judged intent, the judge. A step
// that fails ends the trial aborted, with the step's *TrialError as the
// row's reason, and a nil error: every failure of the trial itself is an
// outcome in the row. The error is ErrInterrupted (wrapped) when ctx
// ended before the trial could finish; ErrDiskFull (wrapped, beside the
// *TrialError of the step that met it) when the run's disk is full, which
// no trial's outcome can record; or a fault of the caller, an intent the
// trials were not given.
func (t *Trials) Run(ctx context.Context, spec TrialSpec) (pairbench.Row, error) {
	tr, err := t.newTrial(spec)
	if err != nil {
		return tr.row, err
	}
	return tr.row, tr.settle(ctx, tr.run(ctx))
}

// newTrial starts the trial of spec now. The error is for an intent the
// trials were not given.
func (t *Trials) newTrial(spec TrialSpec) (*trial, error) {
	started := time.Now()
	tr := &trial{t: t, spec: spec, dir: t.RunDir.File(spec.Dir), started: started, row: pairbench.Row{
		V: pairbench.RowVersion, RunID: t.Plan.RunID, Intent: spec.Job.Intent, Domain: spec.Job.Domain,
		Stage: spec.Job.Stage, Pair: spec.Job.Pair, Order: spec.Job.Order, Arm: spec.Arm,
		Attempt: spec.Job.Attempt, TrialDir: spec.Dir, StartedAt: started.UTC().Format(time.RFC3339),
	}}
	if tr.row.Stage == pairbench.StageAdoption {
		tr.row.Order = ""
	}
	if tr.in = t.Intents[spec.Job.Intent]; tr.in == nil {
		// A job of an intent the trials were not given: a fault of the
		// caller, never an outcome of the trial.
		return tr, fmt.Errorf("%s: intent %s is not among the trials' intents", spec.Dir, spec.Job.Intent)
	}
	return tr, nil
}

// trial is one trial as Run takes its steps: what it runs, and its row as
// the steps fill it in.
type trial struct {
	t       *Trials
	spec    TrialSpec
	in      *TrialIntent
	dir     string // the trial's directory, t.RunDir.File(spec.Dir)
	started time.Time
	row     pairbench.Row
	tl      *timeline
}

// run takes the trial's steps. It returns the *TrialError of the step
// that ended the trial, or ctx's error when ctx ended first.
func (tr *trial) run(ctx context.Context) error {
	if err := tr.makeDir(); err != nil {
		return err
	}
	tr.tl = newTimeline(tr.started)
	tr.tl.mark(rundir.StepSetup, time.Now())
	// Whatever the trial reached is on its timeline, however it ends.
	defer func() {
		tr.tl.mark(rundir.StepEnd, time.Now())
		tr.t.save(filepath.Join(tr.dir, rundir.TrialTimeline), tr.tl.t)
	}()

	setup, err := tr.setUp(ctx)
	if err != nil {
		return err
	}
	defer tr.closeBrowser(ctx, setup.Browser)
	tools, err := tr.serveTools(setup.Browser)
	if err != nil {
		return err
	}
	defer tools.Close()
	if err := tr.startDelay(ctx, setup.Load.LoadedAt); err != nil {
		return err
	}

	task := tr.task(setup, tools)
	res, agentErr := tr.runAgent(ctx, task, setup)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	// The page as the agent left it, at the same moment and size in both
	// arms.
	tr.screenshot(ctx, setup.Browser)
	page, pageErr := tr.finalPage(ctx, setup.Browser)
	_ = os.RemoveAll(task.Dir)
	tools.Close()
	tr.recordPage(ctx, setup, tools)
	if mismatch := CheckBrowserCalls(setup.Browser, setup, &tr.row); mismatch != "" {
		return tr.fail(BrowserCallsStep, errors.New(mismatch))
	}
	tr.recordAgent(res)
	if agentErr != nil {
		// The agent could not be run or observed: nothing it did is known.
		tr.row.Error = agentErr.Error()
		return tr.fail(AgentStep, agentErr)
	}
	if pageErr != nil {
		return tr.fail(FinalPageStep, pageErr)
	}
	return tr.grade(ctx, res, page)
}

// settle makes the end of run the trial's end: an aborted row for a
// step's error, or Run's error for an interrupted trial or a full disk.
func (tr *trial) settle(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		return fmt.Errorf("%s: %w", tr.spec.Dir, ErrInterrupted)
	}
	var te *TrialError
	if !errors.As(err, &te) {
		return fmt.Errorf("%s: %w", tr.spec.Dir, err)
	}
	if DiskFull(err) {
		// The runs directory is full: no trial can be recorded, and
		// every one would abort. A fault, not the trial's outcome.
		return fmt.Errorf("%s: %w: %w", tr.spec.Dir, ErrDiskFull, te)
	}
	tr.row.Outcome, tr.row.Reason = pairbench.Aborted, te.Error()
	return nil
}

// fail ends the trial at step: its wall time stops now, before the
// browser closes.
func (tr *trial) fail(step TrialStep, err error) *TrialError {
	tr.row.WallSeconds = time.Since(tr.started).Seconds()
	return &TrialError{Step: step, Err: err}
}

// makeDir makes the trial's directory afresh. A trial interrupted before
// its row was written may have left its directory behind; this attempt
// owns it now.
func (tr *trial) makeDir() error {
	if err := os.RemoveAll(tr.dir); err != nil {
		return tr.fail(TrialDirStep, err)
	}
	if err := os.MkdirAll(tr.dir, 0o755); err != nil {
		return tr.fail(TrialDirStep, err)
	}
	return nil
}

// setUp readies the trial's browser (SetUpBrowser): the arm's tools
// registered, the start page loaded and checked. What the setup found is
// in the row and the trial's setup.json, whether it failed or not.
func (tr *trial) setUp(ctx context.Context) (*Setup, error) {
	in, arm := tr.in, tr.spec.Arm
	spec := SetupSpec{Arm: arm, StartURL: in.Intent.StartURL, EntryTool: in.Intent.EntryTool,
		Browser: in.Browser, SignedInCheck: in.SignedInCheck, Attempts: tr.t.SetupAttempts, Tools: in.ArmTools(arm)}
	if arm == pairbench.Control && !slices.ContainsFunc(spec.Tools, func(t intents.Tool) bool { return t.Name == in.Intent.EntryTool }) {
		spec.EntryTool = "" // a tools@REV control from before the entry tool
	}
	setup, err := SetUpBrowser(ctx, tr.t.log(), tr.t.Browsers, spec)
	if err != nil {
		var se *SetupError
		if errors.As(err, &se) {
			tr.t.save(filepath.Join(tr.dir, rundir.TrialSetup), map[string]any{"failures": se.Failures})
			tr.row.Unregistered = onePerTool(se.Unregistered)
		}
		return nil, tr.fail(SetupStep, err)
	}
	tr.tl.setup(setup, string(arm), time.Now())
	tr.row.NativeTools = setup.Native
	tr.row.WebMCPImpl = setup.WebMCP
	tr.row.WebMCPEnv = setup.Env
	tr.t.save(filepath.Join(tr.dir, rundir.TrialSetup), setup)
	return setup, nil
}

// closeBrowser closes the trial's browser, even after ctx ended.
func (tr *trial) closeBrowser(ctx context.Context, b Browser) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), closeTimeout)
	defer cancel()
	if err := b.Close(cctx); err != nil {
		tr.t.log().Error("close browser", "trial", tr.spec.Dir, "err", err)
	}
}

// serveTools starts the trial's MCP server, the agent's webmcp tool, on b.
func (tr *trial) serveTools(b Browser) (*webmcp.Server, error) {
	tools := webmcp.New(b, webmcp.Options{Log: tr.t.log()})
	if err := tools.Start(); err != nil {
		return nil, tr.fail(ToolServerStep, err)
	}
	return tools, nil
}

// startDelay waits until StartDelay after the start page loaded: the same
// delay in both arms, so registration never gives treatment's page longer
// to settle. It returns ctx's error when ctx ends first.
func (tr *trial) startDelay(ctx context.Context, loaded time.Time) error {
	wait := time.Until(loaded.Add(tr.t.StartDelay))
	if wait <= 0 {
		return nil
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(wait):
		return nil
	}
}

// task is what the trial's agent is given: the same in both arms but for
// what the browser shows.
func (tr *trial) task(setup *Setup, tools *webmcp.Server) AgentTask {
	devtools := setup.Browser.DevTools()
	plan := tr.t.Plan
	task := AgentTask{
		Prompt:         tr.in.ArmPrompt(tr.spec.Arm),
		SystemPrompt:   SystemPrompt,
		Model:          plan.Model,
		MCPServers:     []MCPServer{tr.t.BrowserMCP(devtools.URL), {Name: webmcp.ServerName, URL: tools.URL()}},
		LoopbackPorts:  []int{tools.Port()},
		Allowlist:      plan.Allowlist,
		Caps:           CapsOf(plan.Caps),
		Dir:            filepath.Join(tr.dir, "agent"),
		TranscriptPath: filepath.Join(tr.dir, rundir.TrialTranscript),
		StepsPath:      filepath.Join(tr.dir, rundir.TrialSteps),
		Start:          tr.tl.start,
	}
	if devtools.Socket != "" {
		task.Sockets = map[int]string{devtools.Port: devtools.Socket}
	}
	return task
}

// runAgent runs the agent on task and records its times: in the row, its
// wall and start-up time; on the timeline, its launch, first turn, end
// and transcript lines. The error is the agent's own (Agent.Run).
func (tr *trial) runAgent(ctx context.Context, task AgentTask, setup *Setup) (AgentResult, error) {
	launched := time.Now()
	tr.tl.mark(rundir.StepAgentLaunched, launched)
	tr.row.StartDelayMS = launched.Sub(setup.Load.LoadedAt).Milliseconds()

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
		if tr.t.OnAgent != nil {
			tr.t.OnAgent(tr.spec)
		}
	}
	res, err := tr.t.Agent.Run(ctx, task)
	ended := time.Now()
	tr.row.WallSeconds = ended.Sub(launched).Seconds()
	select {
	case at := <-firstTurn:
		tr.tl.mark(rundir.StepFirstTurn, at)
		tr.row.StartupSeconds = at.Sub(launched).Seconds()
	default:
	}
	tr.tl.mark(rundir.StepAgentEnded, ended)
	tr.tl.t.Transcript = tr.tl.times(res.TranscriptTimes)
	return res, err
}

// recordPage records what the browser and the webmcp server saw while the
// agent ran: the registered tools that failed on a page, the egress's
// refusals, and the webmcp tool's invocations (the trial's webmcp.jsonl).
func (tr *trial) recordPage(ctx context.Context, setup *Setup, tools *webmcp.Server) {
	row := &tr.row
	if len(tr.in.ArmTools(tr.spec.Arm)) > 0 {
		failed, err := setup.Browser.RegistrationFailures(ctx)
		if err != nil {
			tr.t.log().Warn("read registration failures", "trial", tr.spec.Dir, "err", err)
		}
		row.Unregistered = onePerTool(failed)
	}
	tr.saveRefusals(setup.Browser)
	row.WebMCP = tools.Invocations()
	tr.tl.t.WebMCP = tr.tl.times(tools.Starts())
	tr.t.save(filepath.Join(tr.dir, rundir.TrialWebMCP), row.WebMCP)
	for _, inv := range row.WebMCP {
		row.Adopted = row.Adopted || inv.Registered
	}
}

// recordAgent records in the row what the agent reported of its run.
func (tr *trial) recordAgent(res AgentResult) {
	row := &tr.row
	row.Turns, row.InputTokens, row.OutputTokens, row.CostUSD = res.Turns, res.InputTokens, res.OutputTokens, res.Cost
	row.ToolsDeclared = res.Declared
	if res.CapHit != "" {
		row.CapsHit = []pairbench.Cap{res.CapHit}
	}
}

// grade classifies the agent's answer, checked against the final page
// (page, nil when the intent reads none) and, for a judged intent whose
// answer is correct so far, judged.
func (tr *trial) grade(ctx context.Context, res AgentResult, page *pairbench.PageState) error {
	in, row, plan := tr.in, &tr.row, tr.t.Plan
	facts := grade.Facts{
		Allowlist: plan.Allowlist, ToolsDeclared: res.Declared,
		OutsideCalls: outsideCalls(res.Calls, plan.Allowlist),
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
		var err error
		if facts.Grade, err = tr.judge(ctx, page, facts.Grade); err != nil {
			return tr.fail(JudgeStep, err)
		}
		row.Outcome, row.Reason = grade.Classify(facts)
	}
	if row.Error == "" && res.ErrorMessage != "" {
		row.Error = res.ErrorMessage
	}
	return nil
}

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
func (tr *trial) saveRefusals(b Browser) {
	r, ok := b.(RefusalReporter)
	if !ok {
		return
	}
	refusals, total := r.Refusals()
	tr.row.BrowserRefusals = total
	if len(refusals) == 0 {
		return
	}
	tr.t.save(filepath.Join(tr.dir, rundir.TrialRefusals), refusals)
}

// screenshotTimeout bounds the end-of-trial screenshot.
const screenshotTimeout = 15 * time.Second

// screenshot writes a PNG of b's page to the trial's screenshot.png. A
// screenshot that fails is logged: the row still records the trial.
func (tr *trial) screenshot(ctx context.Context, b Browser) {
	sctx, cancel := context.WithTimeout(ctx, screenshotTimeout)
	defer cancel()
	name := filepath.Join(tr.dir, rundir.TrialScreenshot)
	png, err := b.Screenshot(sctx)
	if err == nil {
		err = os.WriteFile(name, png, 0o644)
	}
	if err != nil {
		tr.t.log().Warn("end-of-trial screenshot", "file", name, "err", err)
		return
	}
	tr.tl.mark(rundir.StepScreenshot, time.Now())
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
