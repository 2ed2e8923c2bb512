package pi

import (
	"encoding/json"

	"github.com/pairbench/pairbench/agent/launch"
	"github.com/pairbench/pairbench/rundir"
)

// steps decodes pi's transcript: the message_end records Stream copies to
// it.
type steps struct{ launch.Steps }

// NewSteps returns a decoder of pi's transcript records into steps.
func NewSteps() launch.Decoder { return &steps{} }

func (d *steps) Record(line []byte) []rundir.Step {
	var rec struct {
		Type    string `json:"type"`
		Message *struct {
			Role     string          `json:"role"`
			Content  json.RawMessage `json:"content"`
			ToolName string          `json:"toolName"`
			IsError  bool            `json:"isError"`
			Error    string          `json:"errorMessage"`
		} `json:"message"`
	}
	if json.Unmarshal(line, &rec) != nil || rec.Type != "message_end" || rec.Message == nil {
		d.Note(string(line))
		return d.Take()
	}
	switch m := rec.Message; m.Role {
	case "system":
		// pi's own system prompt
	case "user":
		d.Add(rundir.TaskStep, launch.ContentText(m.Content))
	case "assistant":
		d.Turn()
		d.blocks(m.Content)
		if m.Error != "" {
			d.Note("the model request failed: " + m.Error)
		}
	case "toolResult":
		d.Result(m.ToolName, launch.ContentText(m.Content), m.IsError)
	default:
		d.Note(string(line))
	}
	return d.Take()
}

// blocks adds an assistant message's content.
func (d *steps) blocks(content json.RawMessage) {
	var bs []launch.Block
	if json.Unmarshal(content, &bs) != nil {
		if t := launch.ContentText(content); t != "" {
			d.Add(rundir.TextStep, t)
		}
		return
	}
	for _, b := range bs {
		switch b.Type {
		case "toolCall":
			d.Call(b.Name, b.Arguments)
		case "thinking":
			d.Add(rundir.ThinkingStep, b.Thinking+b.Text)
		default:
			if t := launch.BlockText(b); t != "" {
				d.Add(rundir.TextStep, t)
			}
		}
	}
}
