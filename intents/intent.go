// Package intents loads a registry: its domains, their WebMCP tool files and
// the intents that exercise them. It validates everything it loads and names
// each problem by file and line.
package intents

import (
	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/intents/config"
)

// Pos is where something was read from (config.Pos): the types that embed
// it (Intent, Rule, Step, ...) print as their position with %v.
type Pos = config.Pos

// Problem and Problems are a registry's problems, each at file:line, as
// package config reports them for .pairbench.yml too.
type (
	Problem  = config.Problem
	Problems = config.Problems
)

// Intent is one task on a site with a gradable answer. It is read from
// bench/intents/<domain>/<id>.yaml (see docs/registry.md).
type Intent struct {
	Pos `json:"-" yaml:"-"`

	ID       string `json:"id" yaml:"id"`
	Domain   string `json:"domain" yaml:"domain"`
	StartURL string `json:"start_url" yaml:"start_url"`
	// Prompt is the task as the agent reads it. It may name fixtures as
	// {{name}}; Resolve substitutes them.
	Prompt string `json:"prompt" yaml:"prompt"`
	// EntryTool is the registered tool that must be live on the start page in
	// treatment, else the trial aborts.
	EntryTool string `json:"entry_tool" yaml:"entry_tool"`
	// Answer is the JSON Schema the extracted answer must satisfy.
	Answer map[string]any `json:"answer" yaml:"answer"`
	Rules  []Rule         `json:"rules,omitempty" yaml:"rules"`
	// Fixtures are named inputs: literal values, or {days_from_start: n}
	// resolved to a date when the run is planned.
	Fixtures  map[string]Fixture `json:"fixtures,omitempty" yaml:"fixtures"`
	Agreement *Agreement         `json:"agreement,omitempty" yaml:"agreement"`
	// Class says how far the answer is pinned.
	Class    pairbench.AnswerClass `json:"class" yaml:"class"`
	Baseline Baseline              `json:"baseline" yaml:"baseline"`
	// Placebo marks an intent the registered tools cannot answer; the report
	// pools such intents into the placebo check.
	Placebo bool `json:"placebo,omitempty" yaml:"placebo"`
	// Criteria, PassAt and Checks make an open-ended intent (class judged;
	// see criteria.go): a judge scores the answer on the criteria, and a
	// trial is correct at a weighted score of PassAt or more. Checks, on
	// any intent, are hard checks on the page the agent left.
	Criteria []Criterion `json:"criteria,omitempty" yaml:"criteria"`
	PassAt   *float64    `json:"pass_at,omitempty" yaml:"pass_at"`
	Checks   []Check     `json:"checks,omitempty" yaml:"checks"`
}

// Rule is one check on the extracted answer. Which fields apply depends on
// Kind; package grade validates and evaluates rules.
type Rule struct {
	Pos `json:"-" yaml:"-"`

	// Kind is the rule's name: equals, one_of, regex, min, max, money, money_min,
	// money_max, date, date_after, date_before, len, distinct, items_above,
	// set_equals.
	Kind string `json:"rule" yaml:"rule"`
	// Field is a dotted path into the answer ("price", "items", "items.0.id");
	// "" is the whole answer.
	Field string `json:"field,omitempty" yaml:"field"`
	// Value is the argument of single-valued rules (equals, regex pattern,
	// min, max, dates, items_above threshold).
	Value any `json:"value,omitempty" yaml:"value"`
	// Values is the argument of set-valued rules (one_of, set_equals).
	Values []any `json:"values,omitempty" yaml:"values"`
	// Min and Max bound a length (len).
	Min *float64 `json:"min,omitempty" yaml:"min"`
	Max *float64 `json:"max,omitempty" yaml:"max"`
	// Key names the item field compared by distinct / items_above /
	// set_equals when items are objects.
	Key string `json:"key,omitempty" yaml:"key"`
	// Fold makes string comparisons case-insensitive.
	Fold bool `json:"fold,omitempty" yaml:"fold"`
}

// Fixture is a literal value, or a date a number of days after the run's
// start (DaysFromStart != nil). In YAML a literal is written as itself
// ("author: Ada Quill") or as {value: ...}; a date as {days_from_start: n}.
// A literal string of the form YYYY-MM-DD is a fixed date: once it is in
// the past the intent is stale (see Stale).
type Fixture struct {
	Value         any  `json:"value,omitempty" yaml:"value"`
	DaysFromStart *int `json:"days_from_start,omitempty" yaml:"days_from_start"`
}

// Agreement is the check for intents whose one right answer moves too fast to
// pin in rules.
type Agreement struct {
	Pos `json:"-" yaml:"-"`

	Kind pairbench.AgreementKind `json:"kind" yaml:"kind"`
	// Field is the answer field compared (a price for cheapest, a list or
	// value for same).
	Field string `json:"field,omitempty" yaml:"field"`
	// Tolerance is the largest price gap (in the answer's currency) that
	// still counts as agreeing, for cheapest.
	Tolerance float64 `json:"tolerance,omitempty" yaml:"tolerance"`
}

// Baseline is what a competent agent does and answers. The scripted model
// follows it, and validate grades Answer as the known-correct answer.
type Baseline struct {
	// Pos is where the baseline's answer is written (the baseline itself
	// when it has none).
	Pos `json:"-" yaml:"-"`

	// ToolArgs are the arguments a competent agent passes to the entry tool.
	ToolArgs map[string]any `json:"tool_args,omitempty" yaml:"tool_args"`
	// Steps are the browser actions a competent agent takes without tools.
	Steps []Step `json:"steps,omitempty" yaml:"steps"`
	// Answer is a known-correct answer; it must grade correct.
	Answer map[string]any `json:"answer" yaml:"answer"`
}

// Step is one browser-control tool call: a Playwright MCP tool name and its
// arguments. An element is named by its accessible name in args.element; a
// step may leave out args.ref, which the scripted model looks up in the
// page's latest snapshot.
type Step struct {
	Pos `json:"-" yaml:"-"`

	Tool string         `json:"tool" yaml:"tool"`
	Args map[string]any `json:"args,omitempty" yaml:"args"`
}

// Domain is one website's configuration, read from domains/<domain>/domain.json.
type Domain struct {
	Pos `json:"-"`

	Name string `json:"-"`
	// StartURLs are URL patterns the start page must match.
	StartURLs []string `json:"start_urls,omitempty"`
	// Exclude names tools never registered.
	Exclude []string `json:"exclude,omitempty"`
	// NeedsSignIn names read tools that need a signed-in account; they are
	// registered only when the domain signs in (Profile set).
	NeedsSignIn []string `json:"needs_sign_in,omitempty"`
	// Profile is a browser profile holding a signed-in session.
	Profile string `json:"profile,omitempty"`
	// SignedInCheck names a tool whose call proves the session is signed in.
	SignedInCheck string `json:"signed_in_check,omitempty"`
	// CartStep describes the page step that creates a cart, which agents must
	// not take (shown to the agent in the system prompt).
	CartStep string `json:"cart_step,omitempty"`
	// Context names the domain's context pack, a file beside domain.json
	// (a path relative to the domain's directory) whose text an arm with
	// context gives its agent (docs/registry.md, Context packs).
	// ContextFile is its slash path inside the registry and ContextText
	// its text, as loaded.
	Context     string `json:"context,omitempty"`
	ContextFile string `json:"-"`
	ContextText string `json:"-"`

	Tools []Tool `json:"-"`
}

// Tool is the metadata of one WebMCP tool file, as evaluated in a sandboxed
// JavaScript interpreter. Only plain data is kept.
type Tool struct {
	Pos `json:"-"`

	Name        string         `json:"name"`
	Title       string         `json:"title,omitempty"`
	Description string         `json:"description"`
	InputSchema map[string]any `json:"inputSchema,omitempty"`
	ReadOnly    bool           `json:"readOnlyHint"`
	// URLPatterns are the URLPattern-style patterns of pages the tool may
	// appear on.
	URLPatterns []string `json:"urlPatterns"`
	// Path is the tool file's slash path inside the registry
	// ("domains/books.example/tools/find_books.js").
	Path string `json:"-"`
	// Source is the tool file's text.
	Source string `json:"-"`
	// Function is the file's page form: a JavaScript function expression
	// that, called with no arguments, runs the file's statements and returns
	// its tool. EvalTool read the metadata from what it returns; in
	// treatment the page registers what it returns. Its line N is the file's
	// line N.
	Function string `json:"-"`
}
