package rundir

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
)

// TrialSteps is the agent's turns as normalised steps (Step), one JSON
// object a line, secrets redacted: what the agent was told, said, thought
// and called, and what each call returned, in one format whatever the agent.
// Its adapter writes it beside transcript.jsonl as the agent runs; trials
// recorded before it have transcript.jsonl alone.
const TrialSteps = "steps.jsonl"

// StepKind is what a Step is.
type StepKind string

// The kinds of Step.
const (
	// TaskStep is the task the agent was given (the user's message).
	TaskStep StepKind = "task"
	// TextStep is text of a model turn.
	TextStep StepKind = "text"
	// ThinkingStep is a model turn's reasoning, where the agent shows it.
	ThinkingStep StepKind = "thinking"
	// CallStep is a tool call the model made.
	CallStep StepKind = "call"
	// ResultStep is what a tool call returned.
	ResultStep StepKind = "result"
	// NoteStep is something of the agent's CLI beside the conversation: an
	// error it reported, a record of a shape the adapter does not know.
	NoteStep StepKind = "note"
)

// Step is one thing in a trial's transcript.
type Step struct {
	Kind StepKind `json:"kind"`
	// AtMS is when the agent wrote it, in milliseconds since the trial
	// started (timeline.json's clock), -1 when unknown.
	AtMS int64 `json:"at_ms"`
	// Turn numbers the model turn a text, thought or call belongs to, from
	// 1; 0 for the rest.
	Turn int `json:"turn,omitempty"`
	// Tool names the called tool (calls and results).
	Tool string `json:"tool,omitempty"`
	// Args are a call's arguments, JSON as the model gave them; a call
	// whose arguments are not JSON (a command line) has them in Text.
	Args json.RawMessage `json:"args,omitempty"`
	// Text is the text: the task, the turn's text or reasoning, the
	// result, the note. It is kept whole.
	Text string `json:"text,omitempty"`
	// Error marks a result the tool reported as an error.
	Error bool `json:"error,omitempty"`
}

// MaxStepLine bounds one line of steps.jsonl a reader takes: a step holds
// a tool's whole result, which can be a page, but not one this large.
const MaxStepLine = 16 << 20

// WriteStep appends s to w as one line of steps.jsonl.
func WriteStep(w io.Writer, s Step) error {
	b, err := json.Marshal(s)
	if err != nil {
		return fmt.Errorf("encode step: %w", err)
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// ReadSteps reads steps.jsonl. A line that is not a step (cut short by a
// crash, say) becomes a note with its text, so nothing is hidden; a line
// longer than MaxStepLine is an error.
func ReadSteps(r io.Reader) ([]Step, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), MaxStepLine)
	var steps []Step
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var s Step
		if err := json.Unmarshal(line, &s); err != nil || s.Kind == "" {
			s = Step{Kind: NoteStep, AtMS: -1, Text: "not a step: " + string(line)}
		}
		steps = append(steps, s)
	}
	if err := sc.Err(); err != nil {
		return steps, fmt.Errorf("read %s: %w", TrialSteps, err)
	}
	return steps, nil
}
