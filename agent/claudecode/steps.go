package claudecode

import (
	"bytes"
	"encoding/json"

	"github.com/pairbench/pairbench/agent/launch"
	"github.com/pairbench/pairbench/rundir"
)

// steps decodes Claude Code's transcript: its stream-json records but the
// partial ones.
type steps struct {
	launch.Steps
	// tools names each call's tool by its id: results carry only the id.
	tools map[string]string
}

// NewSteps returns a decoder of Claude Code's transcript records into
// steps.
func NewSteps() launch.Decoder { return &steps{tools: map[string]string{}} }

func (d *steps) Record(line []byte) []rundir.Step {
	var rec struct {
		Type    string          `json:"type"`
		Message json.RawMessage `json:"message"`
		Result  json.RawMessage `json:"result"`
		IsError bool            `json:"is_error"`
	}
	if json.Unmarshal(line, &rec) != nil {
		d.Note(string(line))
		return d.Take()
	}
	switch rec.Type {
	case "assistant", "user":
		d.message(rec.Type, rec.Message, line)
	case "system", "rate_limit_event":
		// bookkeeping: the session starting, the provider's limits
	case "result":
		if rec.IsError {
			d.Note("the agent ended with an error: " + string(rec.Result))
		}
	default:
		if rec.Type == "" && bytes.Contains(line, []byte(`"duration_api_ms"`)) {
			break // the closing summary, without its type
		}
		d.Note(string(line))
	}
	return d.Take()
}

func (d *steps) message(typ string, raw json.RawMessage, line []byte) {
	var m struct {
		Content json.RawMessage `json:"content"`
	}
	if len(raw) == 0 || json.Unmarshal(raw, &m) != nil {
		d.Note(string(line))
		return
	}
	var bs []launch.Block
	if json.Unmarshal(m.Content, &bs) != nil {
		if typ == "assistant" {
			d.Turn()
			if t := launch.ContentText(m.Content); t != "" {
				d.Add(rundir.TextStep, t)
			}
		} else {
			d.Add(rundir.TaskStep, launch.ContentText(m.Content))
		}
		return
	}
	if typ == "assistant" {
		d.Turn()
	}
	for _, b := range bs {
		switch {
		case b.Type == "tool_use":
			d.tools[b.ID] = b.Name
			d.Call(b.Name, b.Input)
		case b.Type == "tool_result":
			d.Result(d.tools[b.ToolUseID], launch.ContentText(b.Content), b.IsError)
		case b.Type == "thinking":
			d.Add(rundir.ThinkingStep, b.Thinking+b.Text)
		case typ == "assistant":
			if t := launch.BlockText(b); t != "" {
				d.Add(rundir.TextStep, t)
			}
		default:
			if t := launch.BlockText(b); t != "" {
				d.Add(rundir.TaskStep, t)
			}
		}
	}
}
