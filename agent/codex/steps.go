package codex

import (
	"encoding/json"

	"github.com/pairbench/pairbench/agent/launch"
	"github.com/pairbench/pairbench/rundir"
)

// steps decodes Codex's transcript: its exec --json events.
type steps struct{ launch.Steps }

// NewSteps returns a decoder of Codex's transcript records into steps.
func NewSteps() launch.Decoder { return &steps{} }

// item is the part of a completed item the steps show.
type item struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	Message   string          `json:"message"`
	Server    string          `json:"server"`
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
	Result    *struct {
		Content json.RawMessage `json:"content"`
	} `json:"result"`
	Error *struct {
		Message string `json:"message"`
	} `json:"error"`
	Command  string `json:"command"`
	Output   string `json:"aggregated_output"`
	ExitCode *int   `json:"exit_code"`
}

func (d *steps) Record(line []byte) []rundir.Step {
	var rec struct {
		Type string          `json:"type"`
		Item json.RawMessage `json:"item"`
	}
	if json.Unmarshal(line, &rec) != nil {
		d.Note(string(line))
		return d.Take()
	}
	switch rec.Type {
	case "thread.started", "turn.started", "item.started", "turn.completed":
		// bookkeeping: a session starting, an item that completes later
	case "item.completed":
		var it item
		if json.Unmarshal(rec.Item, &it) != nil {
			d.Note(string(line))
			break
		}
		d.item(&it, rec.Item)
	default: // turn.failed, error, and what a later Codex adds
		d.Note(string(line))
	}
	return d.Take()
}

func (d *steps) item(it *item, raw json.RawMessage) {
	switch it.Type {
	case "agent_message":
		d.Turn()
		d.Add(rundir.TextStep, it.Text)
	case "reasoning":
		d.Add(rundir.ThinkingStep, it.Text)
	case "mcp_tool_call":
		d.Turn()
		tool := it.Tool
		if it.Server != "" {
			tool = "mcp__" + it.Server + "__" + it.Tool
		}
		d.Call(tool, it.Arguments)
		switch {
		case it.Error != nil && it.Error.Message != "":
			d.Result(tool, it.Error.Message, true)
		case it.Result != nil:
			d.Result(tool, launch.ContentText(it.Result.Content), false)
		}
	case "command_execution":
		d.Turn()
		d.Command("shell", it.Command)
		d.Result("shell", it.Output, it.ExitCode != nil && *it.ExitCode != 0)
	case "error":
		d.Note(it.Message)
	default:
		d.Note(string(raw))
	}
}
