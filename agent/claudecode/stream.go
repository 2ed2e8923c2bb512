package claudecode

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/agent/launch"
	"github.com/pairbench/pairbench/rundir"
	"github.com/pairbench/pairbench/runner"
)

// event is the part of a Claude Code stream-json record pairbench reads.
type event struct {
	Type    string `json:"type"`
	Subtype string `json:"subtype"`
	// system/init
	Tools []string `json:"tools"`
	// assistant and user
	Message *message `json:"message"`
	// result
	IsError        bool     `json:"is_error"`
	Result         string   `json:"result"`
	TotalCostUSD   *float64 `json:"total_cost_usd"`
	APIErrorStatus int      `json:"api_error_status"`
	TerminalReason string   `json:"terminal_reason"`
}

type message struct {
	ID string `json:"id"`
	// Model is "<synthetic>" on a message Claude Code made itself (an API
	// error it reports as an assistant message): no model call.
	Model      string  `json:"model"`
	Role       string  `json:"role"`
	Content    []block `json:"content"`
	StopReason string  `json:"stop_reason"`
	Usage      *struct {
		Input      int64 `json:"input_tokens"`
		Output     int64 `json:"output_tokens"`
		CacheRead  int64 `json:"cache_read_input_tokens"`
		CacheWrite int64 `json:"cache_creation_input_tokens"`
	} `json:"usage"`
}

type block struct {
	Type string `json:"type"`
	Text string `json:"text"`
	// tool_use
	ID   string `json:"id"`
	Name string `json:"name"`
	// tool_result
	ToolUseID string `json:"tool_use_id"`
	IsError   bool   `json:"is_error"`
}

const syntheticModel = "<synthetic>"

// Stream folds Claude Code's stream-json output into an AgentResult, one
// record at a time, and checks the turn and spend caps as it goes. A model
// call is one assistant message (Claude Code writes one record per content
// block, all with the message's id); its cost is computed from its tokens
// at the model's price, since Claude Code reports a cost only at the end.
type Stream struct {
	caps   runner.Caps
	price  runner.Price
	priced bool
	result runner.AgentResult
	// usage is each message's, by id; the last record of a message wins.
	usage   map[string]runner.Usage
	order   []string
	names   map[string]string // tool_use id → tool name
	lastMsg string
	// transcript receives every record but the partial ones.
	transcript io.Writer
	// Started, when set, is called at the init record: Claude Code is up
	// and its MCP servers connected.
	Started func()
	// Meter, when set, hears each model turn's end (the model gate): when
	// its tool results go back, before the next model call.
	Meter *launch.Meter
}

// NewStream returns a Stream enforcing caps (zero fields are unlimited),
// pricing tokens at the model's price, and copying records to transcript
// (may be nil).
func NewStream(caps runner.Caps, m rundir.Model, transcript io.Writer) *Stream {
	p, ok := runner.PriceOf(m)
	return &Stream{caps: caps, price: p, priced: ok, transcript: transcript,
		usage: map[string]runner.Usage{}, names: map[string]string{}}
}

// Result returns what the stream has shown so far.
func (s *Stream) Result() runner.AgentResult {
	r := s.result
	if !s.priced && r.Turns > 0 {
		r.CostMissing = true
	}
	return r
}

// Feed reads records from r until EOF or a cap is hit, and returns the cap
// hit ("" if none). A line that is not JSON is skipped, and so is one
// longer than launch.MaxRecord.
func (s *Stream) Feed(r io.Reader) (pairbench.Cap, error) {
	c, err := launch.Records(r, launch.MaxRecord, s.record)
	if err != nil {
		return "", fmt.Errorf("read claude events: %w", err)
	}
	if c != "" {
		s.result.CapHit = c
	}
	return c, nil
}

func (s *Stream) record(line []byte) pairbench.Cap {
	var ev event
	if json.Unmarshal(line, &ev) != nil {
		return ""
	}
	if s.transcript != nil && ev.Type != "stream_event" {
		_, _ = s.transcript.Write(line)
		if line[len(line)-1] != '\n' {
			_, _ = s.transcript.Write([]byte{'\n'})
		}
	}
	switch ev.Type {
	case "system":
		if ev.Subtype == "init" {
			s.result.Declared = append([]string(nil), ev.Tools...)
			if s.Started != nil {
				s.Started()
			}
		}
	case "assistant":
		if ev.Message != nil {
			return s.assistant(ev.Message)
		}
	case "user":
		if ev.Message == nil {
			return ""
		}
		results := false
		for _, b := range ev.Message.Content {
			if b.Type == "tool_result" {
				results = true
				s.result.Calls = append(s.result.Calls, runner.ToolCall{Name: s.names[b.ToolUseID], IsError: b.IsError})
			}
		}
		if results {
			s.Meter.Turn(s.result.Cost)
		}
		// The results go back to the model at once: a turn past the cap.
		if results && s.caps.Turns > 0 && s.result.Turns >= s.caps.Turns {
			return pairbench.CapTurns
		}
	case "result":
		s.finish(ev)
	}
	return ""
}

func (s *Stream) assistant(m *message) pairbench.Cap {
	if m.Model == syntheticModel {
		return ""
	}
	if m.ID != s.lastMsg {
		s.lastMsg = m.ID
		s.result.Turns++
		s.order = append(s.order, m.ID)
		s.result.Final = ""
	}
	var texts []string
	for _, b := range m.Content {
		switch b.Type {
		case "text":
			texts = append(texts, b.Text)
		case "tool_use":
			s.names[b.ID] = b.Name
		}
	}
	if len(texts) > 0 {
		s.result.Final = strings.TrimSpace(strings.Join(append([]string{s.result.Final}, texts...), "\n"))
	}
	if m.StopReason != "" {
		s.result.StopReason = m.StopReason
	}
	if m.Usage != nil {
		s.usage[m.ID] = runner.Usage{Input: m.Usage.Input, Output: m.Usage.Output,
			CacheRead: m.Usage.CacheRead, CacheWrite: m.Usage.CacheWrite}
	}
	var total runner.Usage
	for _, id := range s.order {
		total = total.Add(s.usage[id])
	}
	s.result.InputTokens = total.Input + total.CacheRead + total.CacheWrite
	s.result.OutputTokens = total.Output
	s.result.Cost = s.price.Cost(total)
	switch {
	case s.caps.Turns > 0 && s.result.Turns > s.caps.Turns:
		return pairbench.CapTurns
	case s.caps.SpendUSD > 0 && s.result.Cost > s.caps.SpendUSD:
		return pairbench.CapSpend
	}
	return ""
}

// finish applies the result record: the run's outcome and, when Claude Code
// priced the run itself, its cost.
func (s *Stream) finish(ev event) {
	if ev.IsError {
		s.result.StopReason = "error"
		s.result.ErrorMessage = strings.TrimSpace(ev.Result)
		if s.result.ErrorMessage == "" {
			s.result.ErrorMessage = ev.Subtype
		}
		if ev.APIErrorStatus == 429 || ev.APIErrorStatus >= 500 {
			// Claude Code retried the provider and gave up.
			s.result.ProviderGaveUp = true
		}
		return
	}
	s.result.StopReason = "stop"
	if ev.Result != "" {
		s.result.Final = ev.Result
	}
	if ev.TotalCostUSD != nil && *ev.TotalCostUSD > 0 {
		s.result.Cost = *ev.TotalCostUSD
		s.priced = true
	}
}
