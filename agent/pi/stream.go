// Package pi runs the pi coding agent (@earendil-works/pi-coding-agent 1.x)
// as a pairbench agent: isolated, inside the sandbox, in JSON mode, with its
// event stream parsed into a runner.AgentResult.
package pi

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/agent/launch"
	"github.com/pairbench/pairbench/runner"
)

// event is the part of a pi JSON-mode record pairbench reads.
type event struct {
	Type    string   `json:"type"`
	Message *message `json:"message"`
	// tool_execution_end
	ToolName string `json:"toolName"`
	IsError  bool   `json:"isError"`
	// auto_retry_end
	Success    *bool  `json:"success"`
	FinalError string `json:"finalError"`
}

type message struct {
	Role         string          `json:"role"`
	Content      json.RawMessage `json:"content"`
	Usage        *usage          `json:"usage"`
	StopReason   string          `json:"stopReason"`
	ErrorMessage string          `json:"errorMessage"`
	ToolsAdded   []struct {
		Name string `json:"name"`
	} `json:"toolsAdded"`
}

type usage struct {
	Input  int64 `json:"input"`
	Output int64 `json:"output"`
	Cost   *struct {
		Total json.RawMessage `json:"total"`
	} `json:"cost"`
}

type block struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// Stream folds pi's JSON event stream into an AgentResult, one record at a
// time, and checks the turn and spend caps as it goes.
type Stream struct {
	caps   runner.Caps
	result runner.AgentResult
	// transcript receives every message_end record (the authoritative
	// messages); streamed deltas are left out, since a secret could be split
	// across them and escape redaction.
	transcript io.Writer
	// Started, when set, is called at the first turn_start.
	Started func()
	// Meter, when set, hears each model turn's end (the model gate).
	Meter *launch.Meter
}

// NewStream returns a Stream enforcing caps (zero fields are unlimited) and
// copying message_end records to transcript (may be nil).
func NewStream(caps runner.Caps, transcript io.Writer) *Stream {
	return &Stream{caps: caps, transcript: transcript}
}

// Result returns what the stream has shown so far.
func (s *Stream) Result() runner.AgentResult { return s.result }

// Feed reads records from r until EOF or until a cap is hit, and returns the
// cap hit ("" if none). A line that is not JSON is skipped (pi writes only
// JSONL to stdout, but a crash can cut the last record short), and so is
// one longer than launch.MaxRecord.
func (s *Stream) Feed(r io.Reader) (pairbench.Cap, error) {
	c, err := launch.Records(r, launch.MaxRecord, s.record)
	if err != nil {
		return "", fmt.Errorf("read pi events: %w", err)
	}
	if c != "" {
		s.result.CapHit = c
	}
	return c, nil
}

// record applies one JSONL record and returns the cap it broke, if any.
func (s *Stream) record(line []byte) pairbench.Cap {
	var ev event
	if json.Unmarshal(line, &ev) != nil {
		return ""
	}
	switch ev.Type {
	case "turn_start":
		if s.result.Turns == 0 && s.Started != nil {
			s.Started()
		}
		// A turn past the cap is stopped before its model call (the gate
		// refuses it): it is not a turn taken.
		if s.caps.Turns > 0 && s.result.Turns >= s.caps.Turns {
			return pairbench.CapTurns
		}
		s.result.Turns++
	case "tool_execution_end":
		s.result.Calls = append(s.result.Calls, runner.ToolCall{Name: ev.ToolName, IsError: ev.IsError})
	case "auto_retry_end":
		if ev.Success != nil && !*ev.Success {
			s.result.ProviderGaveUp = true
			if s.result.ErrorMessage == "" {
				s.result.ErrorMessage = ev.FinalError
			}
		}
	case "message_end":
		if s.transcript != nil {
			_, _ = s.transcript.Write(line)
			if line[len(line)-1] != '\n' {
				_, _ = s.transcript.Write([]byte{'\n'})
			}
		}
		if ev.Message != nil {
			return s.message(ev.Message)
		}
	}
	return ""
}

func (s *Stream) message(m *message) pairbench.Cap {
	switch m.Role {
	case "system":
		for _, t := range m.ToolsAdded {
			s.result.Declared = append(s.result.Declared, t.Name)
		}
	case "assistant":
		s.result.StopReason = m.StopReason
		if m.ErrorMessage != "" || !s.result.ProviderGaveUp {
			s.result.ErrorMessage = m.ErrorMessage
		}
		s.result.Final = text(m.Content)
		defer func() { s.Meter.Turn(s.result.Cost) }()
		if m.Usage == nil || m.Usage.Cost == nil {
			s.result.CostMissing = true
			return ""
		}
		s.result.InputTokens += m.Usage.Input
		s.result.OutputTokens += m.Usage.Output
		var cost float64
		if json.Unmarshal(m.Usage.Cost.Total, &cost) != nil {
			s.result.CostMissing = true
			return ""
		}
		s.result.Cost += cost
		if s.caps.SpendUSD > 0 && s.result.Cost > s.caps.SpendUSD {
			return pairbench.CapSpend
		}
	}
	return ""
}

// text joins the text blocks of a message's content (a string or a list of
// blocks).
func text(content json.RawMessage) string {
	var s string
	if json.Unmarshal(content, &s) == nil {
		return s
	}
	var blocks []block
	if json.Unmarshal(content, &blocks) != nil {
		return ""
	}
	var parts []string
	for _, b := range blocks {
		if b.Type == "text" && b.Text != "" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}
