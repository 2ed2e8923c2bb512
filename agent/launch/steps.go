package launch

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/pairbench/pairbench/rundir"
)

// Decoder turns the records an agent writes to its transcript into
// normalised steps (rundir.Step), one record at a time. Each adapter has
// its own; a fresh one reads each run's transcript, as the agent writes it
// (Launch.Steps) or from a trial recorded before steps.jsonl
// (DecodeTranscript).
type Decoder interface {
	// Record returns the steps of one line of the transcript, their AtMS
	// left to the caller.
	Record(line []byte) []rundir.Step
}

// DecodeTranscript reads a transcript.jsonl the agent whose records d
// decodes wrote, each line's steps at that line's time in times
// (timeline.json's transcript_ms; -1 past its end). A line that is not
// JSON becomes a note with its text, so nothing the agent did is hidden.
// It reads the trials recorded before the trial kept steps.jsonl.
func DecodeTranscript(r io.Reader, times []int64, d Decoder) ([]rundir.Step, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), rundir.MaxStepLine)
	var steps []rundir.Step
	for n := 0; sc.Scan(); n++ {
		at := int64(-1)
		if n < len(times) {
			at = times[n]
		}
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		for _, s := range decode(d, line) {
			s.AtMS = at
			steps = append(steps, s)
		}
	}
	if err := sc.Err(); err != nil {
		return steps, fmt.Errorf("read transcript: %w", err)
	}
	return steps, nil
}

// decode is d's steps of one transcript line; a line that is not JSON is
// a note with its text.
func decode(d Decoder, line []byte) []rundir.Step {
	if !json.Valid(line) {
		return []rundir.Step{{Kind: rundir.NoteStep, Text: "not JSON: " + string(line)}}
	}
	return d.Record(line)
}

// Steps gathers the steps of a record for a Decoder and numbers the model
// turns, which run on from record to record.
type Steps struct {
	turn int
	out  []rundir.Step
}

// Turn starts the next model turn.
func (s *Steps) Turn() { s.turn++ }

// Add adds a step of kind with text; texts, thoughts and calls belong to
// the current turn.
func (s *Steps) Add(kind rundir.StepKind, text string) {
	s.add(rundir.Step{Kind: kind, Text: text})
}

// Call adds a call of tool with its arguments, JSON.
func (s *Steps) Call(tool string, args json.RawMessage) {
	if len(args) == 0 || string(args) == "null" {
		args = nil
	}
	s.add(rundir.Step{Kind: rundir.CallStep, Tool: tool, Args: bytes.Clone(args)})
}

// Command adds a call of tool whose arguments are a command line.
func (s *Steps) Command(tool, line string) {
	s.add(rundir.Step{Kind: rundir.CallStep, Tool: tool, Text: line})
}

// Result adds what a call of tool returned.
func (s *Steps) Result(tool, text string, isError bool) {
	s.add(rundir.Step{Kind: rundir.ResultStep, Tool: tool, Text: text, Error: isError})
}

// Note adds a note.
func (s *Steps) Note(text string) { s.add(rundir.Step{Kind: rundir.NoteStep, Text: text}) }

func (s *Steps) add(st rundir.Step) {
	switch st.Kind {
	case rundir.TextStep, rundir.ThinkingStep, rundir.CallStep:
		st.Turn = s.turn
	}
	s.out = append(s.out, st)
}

// Take returns the steps added since the last Take.
func (s *Steps) Take() []rundir.Step {
	out := s.out
	s.out = nil
	return out
}

// Block is one content block of a message, in the shapes the agents' APIs
// share: text, reasoning, a tool call or its result.
type Block struct {
	Type     string `json:"type"`
	ID       string `json:"id"`
	Text     string `json:"text"`
	Thinking string `json:"thinking"`
	Name     string `json:"name"`
	// Arguments are pi's toolCall arguments, Input Claude Code's tool_use
	// input.
	Arguments json.RawMessage `json:"arguments"`
	Input     json.RawMessage `json:"input"`
	// ToolUseID, Content and IsError are Claude Code's tool_result.
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
}

// BlockText is a text block's text, "" for other blocks.
func BlockText(b Block) string {
	if b.Type == "text" || b.Type == "" {
		return b.Text
	}
	return ""
}

// ContentText is a message's or a tool result's content as text: a string,
// or the text of its blocks (other blocks, images say, shown by their
// type).
func ContentText(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var bs []Block
	if json.Unmarshal(raw, &bs) != nil {
		return string(raw)
	}
	var parts []string
	for _, b := range bs {
		if t := BlockText(b); t != "" {
			parts = append(parts, t)
		} else if b.Type != "" {
			parts = append(parts, "["+b.Type+"]")
		}
	}
	return strings.Join(parts, "\n")
}
