package codex

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/agent/launch"
	"github.com/pairbench/pairbench/rundir"
	"github.com/pairbench/pairbench/runner"
)

// Codex's `exec --json` events say what the agent did (messages, MCP tool
// calls, the run's total usage) but not when each model call starts, what
// it declared or what it cost. Those come from two of Codex's own trace
// targets on stderr (LogTargets): the body of every model request it
// sends, and every Responses event it receives. No header is logged, so no
// key can be.

// LogTargets is the RUST_LOG value that makes Codex trace its model
// requests and the Responses events it reads, and nothing else.
const LogTargets = "error,codex_http_client::transport=trace,codex_api::sse::responses=trace"

var (
	requestLine = regexp.MustCompile(`codex_http_client::transport: POST to \S+/responses: (\{.*)$`)
	sseLine     = regexp.MustCompile(`codex_api::sse::responses: SSE event: (\{.*)$`)
	// ansi matches the colour codes a terminal-minded logger may add.
	ansi = regexp.MustCompile("\x1b\\[[0-9;]*m")
)

// Stream folds Codex's events (stdout) and its request and response traces
// (stderr) into an AgentResult, checking the turn and spend caps as they
// arrive. A model call is one request; its cost is computed from the
// tokens its response.completed event reports, at the model's price.
type Stream struct {
	mu     sync.Mutex
	caps   runner.Caps
	price  runner.Price
	priced bool
	result runner.AgentResult
	usage  runner.Usage
	// totals is the run's usage as turn.completed reports it.
	totals     *runner.Usage
	declared   map[string]bool
	transcript io.Writer
	// meter hears each model turn's end (the model gate).
	meter *launch.Meter
	// Started, when set, is called at the first model request: Codex is up
	// and its MCP servers listed.
	Started func()
}

// NewStream returns a Stream enforcing caps (zero fields are unlimited),
// pricing tokens at the model's price, and copying events to transcript
// (may be nil).
func NewStream(caps runner.Caps, m rundir.Model, transcript io.Writer) *Stream {
	p, ok := runner.PriceOf(m)
	return &Stream{caps: caps, price: p, priced: ok, transcript: transcript, declared: map[string]bool{}}
}

// Result returns what the streams have shown so far.
func (s *Stream) Result() runner.AgentResult {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.result
	r.Declared = nil
	for name := range s.declared {
		r.Declared = append(r.Declared, name)
	}
	slices.Sort(r.Declared)
	u := s.usage
	if s.totals != nil {
		u = *s.totals
	}
	r.InputTokens, r.OutputTokens = u.Input+u.CacheRead, u.Output
	if !s.priced && r.Turns > 0 {
		r.CostMissing = true
	}
	return r
}

// lines calls f with every line of r until f returns a cap or r ends; a
// line longer than launch.MaxRecord is skipped.
func lines(r io.Reader, f func([]byte) pairbench.Cap) (pairbench.Cap, error) {
	c, err := launch.Records(r, launch.MaxRecord, f)
	if err != nil {
		return "", fmt.Errorf("read codex output: %w", err)
	}
	return c, nil
}

// Feed reads Codex's JSONL events from stdout until EOF or a cap is hit. A
// line that is not JSON is skipped.
func (s *Stream) Feed(r io.Reader) (pairbench.Cap, error) {
	return lines(r, s.event)
}

// Diagnostics reads Codex's stderr: trace lines are applied (and may hit a
// cap), every other line goes to keep.
func (s *Stream) Diagnostics(r io.Reader, keep io.Writer) pairbench.Cap {
	c, _ := lines(r, func(line []byte) pairbench.Cap {
		trimmed := ansi.ReplaceAll(bytes.TrimRight(line, "\r\n"), nil)
		if m := requestLine.FindSubmatch(trimmed); m != nil {
			return s.request(m[1])
		}
		if m := sseLine.FindSubmatch(trimmed); m != nil {
			return s.sse(m[1])
		}
		_, _ = keep.Write(line)
		return ""
	})
	return c
}

type codexEvent struct {
	Type string `json:"type"`
	Item *struct {
		Type    string          `json:"type"`
		Text    string          `json:"text"`
		Message string          `json:"message"`
		Server  string          `json:"server"`
		Tool    string          `json:"tool"`
		Status  string          `json:"status"`
		Error   json.RawMessage `json:"error"`
	} `json:"item"`
	Usage *struct {
		Input  int64 `json:"input_tokens"`
		Cached int64 `json:"cached_input_tokens"`
		Output int64 `json:"output_tokens"`
	} `json:"usage"`
	Message string `json:"message"`
	Error   *struct {
		Message string `json:"message"`
	} `json:"error"`
}

func (s *Stream) event(line []byte) pairbench.Cap {
	var ev codexEvent
	if json.Unmarshal(line, &ev) != nil {
		return ""
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.transcript != nil {
		_, _ = s.transcript.Write(line)
		if line[len(line)-1] != '\n' {
			_, _ = s.transcript.Write([]byte{'\n'})
		}
	}
	switch ev.Type {
	case "item.completed":
		it := ev.Item
		if it == nil {
			return ""
		}
		switch it.Type {
		case "agent_message":
			s.result.Final = it.Text
		case "reasoning", "error", "todo_list":
			// error items are Codex's notices (a model it has no metadata
			// for); a failed run ends in turn.failed.
		case "mcp_tool_call":
			failed := it.Status == "failed" || (len(it.Error) > 0 && string(it.Error) != "null")
			s.result.Calls = append(s.result.Calls, runner.ToolCall{Name: "mcp__" + it.Server + "__" + it.Tool, IsError: failed})
		default:
			// Any other item is a built-in tool at work (a command, a
			// patch, a search): a call outside the allowlist.
			s.result.Calls = append(s.result.Calls, runner.ToolCall{Name: it.Type, IsError: it.Status == "failed"})
		}
	case "turn.completed":
		s.result.StopReason = "stop"
		if u := ev.Usage; u != nil {
			s.totals = &runner.Usage{Input: u.Input - u.Cached, CacheRead: u.Cached, Output: u.Output}
		}
	case "turn.failed":
		s.result.StopReason = "error"
		if ev.Error != nil {
			s.result.ErrorMessage = ev.Error.Message
		}
		s.result.ProviderGaveUp = providerGaveUp(s.result.ErrorMessage)
	case "error":
		s.result.ErrorMessage = ev.Message
	}
	return ""
}

// providerGaveUp reads Codex's last error as the provider failing after
// Codex's retries: a 429 or 5xx status, or its retry limit.
func providerGaveUp(msg string) bool {
	m := strings.ToLower(msg)
	if strings.Contains(m, "retry limit") || strings.Contains(m, "429") || strings.Contains(m, "too many requests") {
		return true
	}
	return regexp.MustCompile(`\b5\d\d\b`).MatchString(m)
}

// request applies one model request: a turn, and the tools it declared.
func (s *Stream) request(body []byte) pairbench.Cap {
	var req struct {
		Tools []struct {
			Type  string `json:"type"`
			Name  string `json:"name"`
			Tools []struct {
				Name string `json:"name"`
			} `json:"tools"`
		} `json:"tools"`
	}
	parsed := json.Unmarshal(body, &req) == nil
	s.mu.Lock()
	// A request past the turn cap is refused by the model gate: it is not
	// a turn taken.
	over := s.caps.Turns > 0 && s.result.Turns >= s.caps.Turns
	if !over {
		s.result.Turns++
	}
	first := s.result.Turns == 1
	if parsed {
		for _, t := range req.Tools {
			switch {
			case t.Type == "namespace":
				for _, f := range t.Tools {
					s.declared[t.Name+"__"+f.Name] = true
				}
			case t.Name != "":
				s.declared[t.Name] = true
			default:
				s.declared[t.Type] = true // a hosted tool (web_search)
			}
		}
	}
	s.mu.Unlock()
	if first && s.Started != nil {
		s.Started()
	}
	if over {
		return s.hit(pairbench.CapTurns)
	}
	return ""
}

// sse applies one Responses event: a completed response's usage and cost.
func (s *Stream) sse(data []byte) pairbench.Cap {
	var ev struct {
		Type     string `json:"type"`
		Response struct {
			Usage *struct {
				Input   int64 `json:"input_tokens"`
				Output  int64 `json:"output_tokens"`
				Details struct {
					Cached int64 `json:"cached_tokens"`
				} `json:"input_tokens_details"`
			} `json:"usage"`
		} `json:"response"`
	}
	if json.Unmarshal(data, &ev) != nil || ev.Type != "response.completed" || ev.Response.Usage == nil {
		return ""
	}
	u := ev.Response.Usage
	s.mu.Lock()
	s.usage = s.usage.Add(runner.Usage{Input: u.Input - u.Details.Cached, CacheRead: u.Details.Cached, Output: u.Output})
	s.result.Cost = s.price.Cost(s.usage)
	over := s.caps.SpendUSD > 0 && s.result.Cost > s.caps.SpendUSD
	meter, cost := s.meter, s.result.Cost
	s.mu.Unlock()
	meter.Turn(cost)
	if over {
		return s.hit(pairbench.CapSpend)
	}
	return ""
}

func (s *Stream) hit(c pairbench.Cap) pairbench.Cap {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.result.CapHit == "" {
		s.result.CapHit = c
	}
	return c
}
