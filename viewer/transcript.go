package viewer

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// A step is one thing in a trial's transcript, as its page shows it: the
// task the agent was given, a model turn's text or reasoning, a tool call
// with its arguments, a tool's result, or a note from the agent's CLI.
type step struct {
	Kind stepKind
	// Turn numbers the model turn a text or call belongs to (from 1), 0
	// for the rest.
	Turn int
	// AtMS is when the transcript line was written, in milliseconds since
	// the trial started (timeline.json), -1 when unknown.
	AtMS int64
	// Tool is the called tool's name (calls and results).
	Tool string
	// Text is the text, the call's arguments as indented JSON, or the
	// result, trimmed to maxStepText.
	Text string
	// Trimmed counts the characters left out of Text.
	Trimmed int
	// Error marks a result the tool reported as an error.
	Error bool
}

type stepKind string

const (
	stepTask     stepKind = "task"
	stepText     stepKind = "text"
	stepThinking stepKind = "thinking"
	stepCall     stepKind = "call"
	stepResult   stepKind = "result"
	stepNote     stepKind = "note"
)

// maxStepText bounds the text a step keeps: tool results can be whole
// pages. The transcript file keeps everything.
const maxStepText = 2000

// maxTranscriptLine bounds one transcript line the viewer reads.
const maxTranscriptLine = 16 << 20

// readTranscript reads a transcript.jsonl in any of the formats pairbench's
// agents write (pi's message_end records, Claude Code's stream-json, Codex's
// exec events) into steps. times gives, per line, when it was written. A
// line of no known shape becomes a note with its raw text, so nothing the
// agent did is hidden; a line that is not JSON likewise.
func readTranscript(r io.Reader, times []int64) ([]step, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxTranscriptLine)
	d := &decoder{calls: map[string]string{}}
	for n := 0; sc.Scan(); n++ {
		d.at = -1
		if n < len(times) {
			d.at = times[n]
		}
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		d.line(line)
	}
	if err := sc.Err(); err != nil {
		return d.steps, fmt.Errorf("read transcript: %w", err)
	}
	return d.steps, nil
}

type decoder struct {
	steps []step
	turn  int
	at    int64
	// calls names the tool of each Claude Code call by its id.
	calls map[string]string
}

func (d *decoder) add(kind stepKind, tool, text string) {
	s := step{Kind: kind, AtMS: d.at, Tool: tool}
	if kind == stepText || kind == stepThinking || kind == stepCall {
		s.Turn = d.turn
	}
	s.Text, s.Trimmed = trim(text, maxStepText)
	d.steps = append(d.steps, s)
}

// record is the union of the fields the three formats' records use.
type record struct {
	Type    string          `json:"type"`
	Subtype string          `json:"subtype"`
	Message json.RawMessage `json:"message"`
	Item    *codexItem      `json:"item"`
	Result  json.RawMessage `json:"result"`
	IsError bool            `json:"is_error"`
}

// message is a pi or Claude Code message.
type message struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolName   string          `json:"toolName"`
	IsError    bool            `json:"isError"`
	StopReason string          `json:"stopReason"`
	Error      string          `json:"errorMessage"`
}

// block is one content block of a message, in either format.
type block struct {
	Type      string          `json:"type"`
	ID        string          `json:"id"`
	Text      string          `json:"text"`
	Thinking  string          `json:"thinking"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"` // pi toolCall
	Input     json.RawMessage `json:"input"`     // Claude Code tool_use
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"` // Claude Code tool_result
	IsError   bool            `json:"is_error"`
}

type codexItem struct {
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

func (d *decoder) line(line []byte) {
	var rec record
	if err := json.Unmarshal(line, &rec); err != nil {
		d.add(stepNote, "", "not JSON: "+string(line))
		return
	}
	switch {
	case rec.Type == "message_end" && rec.Message != nil: // pi
		d.piMessage(rec.Message, line)
	case (rec.Type == "assistant" || rec.Type == "user") && rec.Message != nil: // Claude Code
		d.claudeMessage(rec.Type, rec.Message, line)
	case rec.Type == "system" || rec.Type == "thread.started" || rec.Type == "turn.started" ||
		rec.Type == "item.started" || rec.Type == "turn.completed" || rec.Type == "rate_limit_event":
		// Bookkeeping: a session starting, an item that completes later.
	case rec.Type == "result": // Claude Code's last record
		if rec.IsError {
			d.add(stepNote, "", "the agent ended with an error: "+string(rec.Result))
		}
	case rec.Type == "item.completed" && rec.Item != nil: // Codex
		d.codexItem(rec.Item)
	case rec.Type == "turn.failed" || rec.Type == "error":
		d.add(stepNote, "", string(line))
	default:
		if rec.Type == "" && bytes.Contains(line, []byte(`"duration_api_ms"`)) {
			return // Claude Code's closing summary, without its type
		}
		d.add(stepNote, "", string(line))
	}
}

func (d *decoder) piMessage(raw json.RawMessage, line []byte) {
	var m message
	if json.Unmarshal(raw, &m) != nil {
		d.add(stepNote, "", string(line))
		return
	}
	switch m.Role {
	case "system":
		return // the agent's own system prompt
	case "user":
		d.add(stepTask, "", contentText(m.Content))
	case "assistant":
		d.turn++
		d.blocks(m.Content)
		if m.Error != "" {
			d.add(stepNote, "", "the model request failed: "+m.Error)
		}
	case "toolResult":
		d.result(m.ToolName, contentText(m.Content), m.IsError)
	default:
		d.add(stepNote, "", string(line))
	}
}

func (d *decoder) claudeMessage(typ string, raw json.RawMessage, line []byte) {
	var m message
	if json.Unmarshal(raw, &m) != nil {
		d.add(stepNote, "", string(line))
		return
	}
	if typ == "assistant" {
		d.turn++
		d.blocks(m.Content)
		return
	}
	var bs []block
	if json.Unmarshal(m.Content, &bs) != nil {
		d.add(stepTask, "", contentText(m.Content))
		return
	}
	for _, b := range bs {
		if b.Type == "tool_result" {
			d.result(d.toolOf(b.ToolUseID), contentText(b.Content), b.IsError)
		} else if t := blockText(b); t != "" {
			d.add(stepTask, "", t)
		}
	}
}

// toolOf names the tool of call id: Claude Code's results carry only the
// call's id.
func (d *decoder) toolOf(id string) string { return d.calls[id] }

// blocks adds an assistant message's content blocks.
func (d *decoder) blocks(content json.RawMessage) {
	var bs []block
	if json.Unmarshal(content, &bs) != nil {
		if t := contentText(content); t != "" {
			d.add(stepText, "", t)
		}
		return
	}
	for _, b := range bs {
		switch b.Type {
		case "toolCall":
			d.add(stepCall, b.Name, indent(b.Arguments))
		case "tool_use":
			d.calls[b.ID] = b.Name
			d.add(stepCall, b.Name, indent(b.Input))
		case "thinking":
			d.add(stepThinking, "", b.Thinking+b.Text)
		default:
			if t := blockText(b); t != "" {
				d.add(stepText, "", t)
			}
		}
	}
}

func (d *decoder) result(tool, text string, isError bool) {
	if t := strings.TrimSpace(text); strings.HasPrefix(t, "{") || strings.HasPrefix(t, "[") {
		text = indent(json.RawMessage(t))
	}
	d.add(stepResult, tool, text)
	d.steps[len(d.steps)-1].Error = isError
}

func (d *decoder) codexItem(it *codexItem) {
	switch it.Type {
	case "agent_message":
		d.turn++
		d.add(stepText, "", it.Text)
	case "reasoning":
		d.add(stepThinking, "", it.Text)
	case "mcp_tool_call":
		d.turn++
		tool := it.Tool
		if it.Server != "" {
			tool = "mcp__" + it.Server + "__" + it.Tool
		}
		d.add(stepCall, tool, indent(it.Arguments))
		switch {
		case it.Error != nil && it.Error.Message != "":
			d.result(tool, it.Error.Message, true)
		case it.Result != nil:
			d.result(tool, contentText(it.Result.Content), false)
		}
	case "command_execution":
		d.turn++
		d.add(stepCall, "shell", it.Command)
		d.result("shell", it.Output, it.ExitCode != nil && *it.ExitCode != 0)
	case "error":
		d.add(stepNote, "", it.Message)
	default:
		b, _ := json.Marshal(it)
		d.add(stepNote, "", string(b))
	}
}

// contentText is a message's or result's content as text: a string, or the
// text of its blocks (other blocks, images say, shown by their type).
func contentText(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var bs []block
	if json.Unmarshal(raw, &bs) != nil {
		return string(raw)
	}
	var parts []string
	for _, b := range bs {
		if t := blockText(b); t != "" {
			parts = append(parts, t)
		} else if b.Type != "" {
			parts = append(parts, "["+b.Type+"]")
		}
	}
	return strings.Join(parts, "\n")
}

func blockText(b block) string {
	if b.Type == "text" || b.Type == "" {
		return b.Text
	}
	return ""
}

// indent shows JSON arguments indented, or as they are when they are not
// JSON.
func indent(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return "{}"
	}
	var b bytes.Buffer
	if json.Indent(&b, raw, "", "  ") != nil {
		return string(raw)
	}
	return b.String()
}

// trim keeps s's first max characters (runes), cut at a rune boundary,
// and returns how many it left out.
func trim(s string, max int) (string, int) {
	if len(s) <= max {
		return s, 0
	}
	n := utf8.RuneCountInString(s)
	if n <= max {
		return s, 0
	}
	cut := 0
	for i := 0; i < max; i++ {
		_, size := utf8.DecodeRuneInString(s[cut:])
		cut += size
	}
	return s[:cut], n - max
}
