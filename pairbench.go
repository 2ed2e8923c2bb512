// Package pairbench holds the vocabulary every other package shares: the two
// arms of a paired trial, the outcome of one trial attempt, the verdict labels,
// an intent's answer class and agreement kind, and Row, one line of a run's
// rows.jsonl.
//
// It imports nothing of ours, so every package may import it.
package pairbench

import (
	"fmt"
	"slices"
)

// Arm is one side of a pair: the same agent without (control) or with
// (treatment) the domain's tools registered in its browser.
type Arm string

const (
	Control   Arm = "control"
	Treatment Arm = "treatment"
)

// Arms lists both arms in a fixed order, control first.
var Arms = [2]Arm{Control, Treatment}

// Valid reports whether a is one of the two arms.
func (a Arm) Valid() bool { return a == Control || a == Treatment }

// Order is the order in which a pair's two trials run: AB runs control first,
// BA runs treatment first.
type Order string

const (
	AB Order = "AB"
	BA Order = "BA"
)

// Valid reports whether o is AB or BA.
func (o Order) Valid() bool { return o == AB || o == BA }

// Arms returns the pair's arms in the order they run.
func (o Order) Arms() [2]Arm {
	if o == BA {
		return [2]Arm{Treatment, Control}
	}
	return [2]Arm{Control, Treatment}
}

// Outcome is how one trial attempt ended.
type Outcome string

const (
	// Correct: an answer was extracted and passed the schema and every rule.
	Correct Outcome = "correct"
	// Wrong: an answer was extracted but failed the schema or a rule.
	Wrong Outcome = "wrong"
	// Malformed: no answer could be extracted from the final message.
	Malformed Outcome = "malformed"
	// Crashed: the agent broke the trial's contract (a call outside the
	// allowlist succeeded, it ended on an error, or it reported no cost).
	Crashed Outcome = "crashed"
	// Timeout: the agent hit the time, turn or spend cap.
	Timeout Outcome = "timeout"
	// Aborted: the trial says nothing about the agent (setup failed, the
	// provider gave up, the runner erred); its whole pair runs again.
	Aborted Outcome = "aborted"
)

// Outcomes lists every outcome in report order.
var Outcomes = []Outcome{Correct, Wrong, Malformed, Crashed, Timeout, Aborted}

// Valid reports whether o is a known outcome.
func (o Outcome) Valid() bool { return slices.Contains(Outcomes, o) }

// Scored reports whether the attempt counts toward the statistics: every
// known outcome except Aborted.
func (o Outcome) Scored() bool { return o.Valid() && o != Aborted }

// Label is the one-word verdict for an intent (see docs/statistics.md).
type Label string

const (
	LessAccurate Label = "less accurate"
	Slower       Label = "slower"
	Mixed        Label = "mixed"
	NoAdoption   Label = "no adoption"
	NoSignal     Label = "no signal"
	Inconclusive Label = "inconclusive"
	Faster       Label = "faster"
	MoreAccurate Label = "more accurate"
	Better       Label = "better"
)

// Labels lists every label from worst to best. The order is a product
// decision: a PR's rollup shows its worst label, so what most needs a human's
// attention comes first.
var Labels = []Label{LessAccurate, Slower, Mixed, NoAdoption, NoSignal, Inconclusive, Faster, MoreAccurate, Better}

// Claims reports whether l claims a difference between the arms (a label
// of speed or accuracy, not inconclusive, no signal or no adoption).
func (l Label) Claims() bool {
	switch l {
	case Faster, Slower, MoreAccurate, LessAccurate, Better, Mixed:
		return true
	}
	return false
}

// Rank returns l's position in Labels (0 is worst), or -1 for an unknown label.
func (l Label) Rank() int { return slices.Index(Labels, l) }

// Worst returns the worst of labels, or "" when there are none.
func Worst(labels ...Label) Label {
	var worst Label
	for _, l := range labels {
		if l.Rank() < 0 {
			continue
		}
		if worst == "" || l.Rank() < worst.Rank() {
			worst = l
		}
	}
	return worst
}

// AnswerClass says how strictly an intent's answer is known.
type AnswerClass string

const (
	// AnswerPinned: the rules pin the one right answer.
	AnswerPinned AnswerClass = "pinned"
	// AnswerAgreement: the right answer moves too fast to pin; both arms'
	// correct answers must agree (see AgreementKind).
	AnswerAgreement AnswerClass = "agreement"
	// AnswerShapeOnly: only the answer's shape can be checked.
	AnswerShapeOnly AnswerClass = "shape only"
	// AnswerJudged: the task is open-ended; a judge model scores the answer
	// against the intent's weighted criteria.
	AnswerJudged AnswerClass = "judged"
)

// AnswerClasses lists every answer class.
var AnswerClasses = []AnswerClass{AnswerPinned, AnswerAgreement, AnswerShapeOnly, AnswerJudged}

// Valid reports whether c is a known answer class.
func (c AnswerClass) Valid() bool { return slices.Contains(AnswerClasses, c) }

// AgreementKind names the agreement check applied to an intent's
// both-correct pairs.
type AgreementKind string

const (
	// AgreeSame: both arms' answers must agree as sets.
	AgreeSame AgreementKind = "same"
	// AgreeCheapest: both arms look for a minimum price; the higher one
	// missed it when they differ by more than the tolerance.
	AgreeCheapest AgreementKind = "cheapest"
)

// Valid reports whether k is a known agreement kind.
func (k AgreementKind) Valid() bool { return k == AgreeSame || k == AgreeCheapest }

// Stage names the part of a run a trial belongs to.
type Stage string

const (
	// StagePair is a trial of a paired A/B comparison (the default).
	StagePair Stage = "pair"
	// StageAdoption is a treatment-only trial that checks the agent uses the
	// tools at all before a domain gets pairs.
	StageAdoption Stage = "adoption"
)

// Cap names a limit the runner enforces on an agent from outside.
type Cap string

const (
	CapTime  Cap = "time"
	CapTurns Cap = "turns"
	CapSpend Cap = "spend"
)

// WebMCPImpl names whose WebMCP a trial's page had: the browser's own, or
// the polyfill pairbench injects where the browser has none.
type WebMCPImpl string

const (
	// WebMCPNative: the browser offers WebMCP itself (Kernel's browsers,
	// Chromium with WebMCPTesting); registered tools go through it.
	WebMCPNative WebMCPImpl = "native"
	// WebMCPPolyfill: the browser has no WebMCP; pairbench's polyfill
	// provides document.modelContext.
	WebMCPPolyfill WebMCPImpl = "polyfill"
)

// Valid reports whether w is a known WebMCP implementation, or "" (not
// recorded: a row from before the field, a trial that never got a page, or a
// browser that cannot tell).
func (w WebMCPImpl) Valid() bool { return w == "" || w == WebMCPNative || w == WebMCPPolyfill }

// RowVersion is the schema version written in every Row's "v" field.
const RowVersion = 1

// Row is one trial attempt: one line of rows.jsonl. docs/rows.md documents
// every field; a change that breaks readers bumps RowVersion.
type Row struct {
	V        int    `json:"v"`
	RunID    string `json:"run_id"`
	Intent   string `json:"intent"`
	Domain   string `json:"domain"`
	Stage    Stage  `json:"stage"`
	Pair     int    `json:"pair"`
	Order    Order  `json:"order"`
	Arm      Arm    `json:"arm"`
	Attempt  int    `json:"attempt"`
	TrialDir string `json:"trial_dir"`

	Outcome Outcome `json:"outcome"`
	Reason  string  `json:"reason,omitempty"`
	Answer  Answer  `json:"answer"`

	WallSeconds  float64 `json:"wall_seconds"`
	StartDelayMS int64   `json:"start_delay_ms"`
	Turns        int     `json:"turns"`
	InputTokens  int64   `json:"input_tokens"`
	OutputTokens int64   `json:"output_tokens"`
	CostUSD      float64 `json:"cost_usd"`
	CapsHit      []Cap   `json:"caps_hit,omitempty"`

	// StartupSeconds is the time from the agent's launch to its first
	// model request: the agent CLI's own start-up, inside WallSeconds.
	// WallSeconds less it is the time from the first model request. 0 when
	// the agent made no request, or in rows from before the field.
	StartupSeconds float64 `json:"startup_seconds,omitempty"`

	ToolsDeclared []string     `json:"tools_declared,omitempty"`
	WebMCP        []Invocation `json:"webmcp,omitempty"`
	NativeTools   []string     `json:"native_tools,omitempty"`
	// Unregistered are the registered tools that did not become live on a
	// page of the trial, each tool and message once.
	Unregistered []RegistrationFailure `json:"unregistered,omitempty"`
	// Adopted is true when the agent invoked at least one registered tool.
	Adopted bool `json:"adopted"`
	// BrowserRefusals counts the requests of the trial's browser that its
	// egress refused (the trial directory's browser-refusals.jsonl lists
	// them): a site that needs a refused destination shows here.
	BrowserRefusals int `json:"browser_refusals,omitempty"`
	// WebMCPImpl is whose WebMCP the start page had, in either arm; ""
	// when not recorded.
	WebMCPImpl WebMCPImpl `json:"webmcp_impl,omitempty"`
	// WebMCPEnv is the browser's WebMCP environment on the start page; nil
	// when not recorded (older rows, a trial aborted before its page
	// loaded).
	WebMCPEnv *WebMCPEnv `json:"webmcp_env,omitempty"`
	// BrowserWebMCP are the tool invocations the browser's own WebMCP
	// reported, in order, where it reports them (native WebMCP with the
	// DevTools WebMCP domain); nil elsewhere.
	BrowserWebMCP []BrowserCall `json:"browser_webmcp,omitempty"`
	// Judge is the judge's scores of a trial of a judged intent; nil when
	// no judge was asked (another class, a trial that ended otherwise, or a
	// row from before judges).
	Judge *Judgement `json:"judge,omitempty"`

	Error     string `json:"error,omitempty"`
	StartedAt string `json:"started_at,omitempty"` // RFC 3339, UTC
}

// Answer is the agent's final message and what grading extracted from it.
type Answer struct {
	Raw       string         `json:"raw,omitempty"`
	Extracted map[string]any `json:"extracted,omitempty"`
}

// Invocation is one call of a page's WebMCP tool made through pairbench's
// webmcp tool.
type Invocation struct {
	Tool string `json:"tool"`
	// Status is "ok", or "error" when the call failed, the tool threw, or the
	// tool's own result said {"status":"error"} or isError.
	Status string `json:"status"`
	Error  string `json:"error,omitempty"`
	MS     int64  `json:"ms"`
	// Registered is true when the tool was one pairbench registered, false for
	// the page's own (native) tools.
	Registered bool `json:"registered"`
}

// RegistrationFailure is a tool pairbench registered that did not become
// live on a page whose URL its patterns match: the browser could not compile
// its file, the file threw, or the page's WebMCP refused the tool.
type RegistrationFailure struct {
	Tool string `json:"tool"`
	// File is the tool file's path inside the registry; Line is the line
	// in it the browser's error points at, 0 when unknown.
	File string `json:"file,omitempty"`
	Line int    `json:"line,omitempty"`
	// URL is the page the tool did not register on.
	URL string `json:"url,omitempty"`
	// Error is the browser's own message.
	Error string `json:"error"`
}

// String reads "tool list_genre (domains/books.example/tools/list_genre.js:3)
// did not register on http://books.example/: SyntaxError: ...".
func (f RegistrationFailure) String() string {
	where := f.File
	if where != "" && f.Line > 0 {
		where = fmt.Sprintf("%s:%d", where, f.Line)
	}
	s := "tool " + f.Tool
	if where != "" {
		s += " (" + where + ")"
	}
	s += " did not register"
	if f.URL != "" {
		s += " on " + f.URL
	}
	return s + ": " + f.Error
}

// Key identifies the pair a row belongs to within a run.
type Key struct {
	Intent string
	Pair   int
}

// Key returns the pair the row belongs to.
func (r Row) Key() Key { return Key{Intent: r.Intent, Pair: r.Pair} }

// Validate reports the first field that makes r unusable.
func (r Row) Validate() error {
	switch {
	case r.V != RowVersion:
		return fmt.Errorf("unsupported row version %d (want %d)", r.V, RowVersion)
	case r.Intent == "":
		return fmt.Errorf("missing intent")
	case !r.Arm.Valid():
		return fmt.Errorf("unknown arm %q", r.Arm)
	case !r.Outcome.Valid():
		return fmt.Errorf("unknown outcome %q", r.Outcome)
	case r.Stage != StagePair && r.Stage != StageAdoption:
		return fmt.Errorf("unknown stage %q", r.Stage)
	case r.Stage == StagePair && !r.Order.Valid():
		return fmt.Errorf("unknown order %q", r.Order)
	case r.Pair < 0 || r.Attempt < 1:
		return fmt.Errorf("pair %d attempt %d out of range", r.Pair, r.Attempt)
	case r.WallSeconds < 0 || r.CostUSD < 0:
		return fmt.Errorf("negative wall time or cost")
	case !r.WebMCPImpl.Valid():
		return fmt.Errorf("unknown webmcp_impl %q", r.WebMCPImpl)
	case r.WebMCPEnv != nil && !r.WebMCPEnv.Mode.Valid():
		return fmt.Errorf("unknown webmcp_env mode %q", r.WebMCPEnv.Mode)
	case r.Judge != nil:
		return r.Judge.validate()
	}
	return nil
}
