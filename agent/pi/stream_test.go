package pi

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/runner"
)

// TestStreamRecordedPi reads a stream recorded from the real pi 1.6.0
// answering through pairbench's MCP surface.
func TestStreamRecordedPi(t *testing.T) {
	f, err := os.Open("testdata/pi-1.6.0-answer.jsonl")
	require.NoError(t, err)
	defer f.Close()
	var transcript bytes.Buffer
	s := NewStream(runner.Caps{Turns: 10, SpendUSD: 1}, &transcript)
	capHit, err := s.Feed(f)
	require.NoError(t, err)
	assert.Empty(t, capHit)
	r := s.Result()
	assert.Equal(t, []string{"mcp__pairbench__webmcp"}, r.Declared)
	assert.Equal(t, 1, r.Turns)
	assert.Equal(t, "stop", r.StopReason)
	assert.Contains(t, r.Final, `{"a":1}`)
	assert.Equal(t, int64(100), r.InputTokens)
	assert.Equal(t, int64(20), r.OutputTokens)
	assert.InDelta(t, 0.0006, r.Cost, 1e-12)
	assert.False(t, r.CostMissing)
	assert.Equal(t, 3, strings.Count(transcript.String(), "\n"), "three message_end records, no deltas")
	assert.NotContains(t, transcript.String(), "message_update")
}

func line(v map[string]any) string {
	b, _ := json.Marshal(v)
	return string(b) + "\n"
}

func assistant(text string, cost any, stop, errMsg string) string {
	u := map[string]any{"input": 10, "output": 5}
	if cost != nil {
		u["cost"] = map[string]any{"total": cost}
	}
	m := map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "text", "text": text}},
		"usage": u, "stopReason": stop}
	if errMsg != "" {
		m["errorMessage"] = errMsg
	}
	return line(map[string]any{"type": "message_end", "message": m})
}

func TestStreamOutcomes(t *testing.T) {
	turn := line(map[string]any{"type": "turn_start"})
	huge := strings.Repeat("x", 600_000)
	cases := []struct {
		name  string
		in    string
		caps  runner.Caps
		check func(t *testing.T, r runner.AgentResult, c pairbench.Cap)
	}{
		{"long lines", turn + assistant(huge, 0.01, "stop", ""), runner.Caps{}, func(t *testing.T, r runner.AgentResult, c pairbench.Cap) {
			assert.Len(t, r.Final, len(huge))
		}},
		{"error with exit 0", turn + assistant("", 0.0, "error", "401 bad key"), runner.Caps{}, func(t *testing.T, r runner.AgentResult, c pairbench.Cap) {
			assert.Equal(t, "error", r.StopReason)
			assert.Equal(t, "401 bad key", r.ErrorMessage)
			assert.False(t, r.ProviderGaveUp)
		}},
		{"provider gave up", turn + line(map[string]any{"type": "auto_retry_start", "attempt": 1}) +
			line(map[string]any{"type": "auto_retry_end", "success": false, "finalError": "529 overloaded"}) +
			assistant("", 0.0, "error", ""), runner.Caps{}, func(t *testing.T, r runner.AgentResult, c pairbench.Cap) {
			assert.True(t, r.ProviderGaveUp)
			assert.Equal(t, "529 overloaded", r.ErrorMessage)
		}},
		{"missing cost", turn + assistant("hi", nil, "stop", ""), runner.Caps{}, func(t *testing.T, r runner.AgentResult, c pairbench.Cap) {
			assert.True(t, r.CostMissing)
		}},
		{"non-numeric cost", turn + assistant("hi", "free", "stop", ""), runner.Caps{}, func(t *testing.T, r runner.AgentResult, c pairbench.Cap) {
			assert.True(t, r.CostMissing)
		}},
		{"turn cap", turn + assistant("a", 0.01, "toolUse", "") + turn + assistant("b", 0.01, "toolUse", "") + turn + assistant("c", 0.01, "stop", ""),
			runner.Caps{Turns: 2}, func(t *testing.T, r runner.AgentResult, c pairbench.Cap) {
				assert.Equal(t, pairbench.CapTurns, c)
				assert.Equal(t, 2, r.Turns, "the turn past the cap is stopped before its model call: not a turn taken")
				assert.Equal(t, "b", r.Final, "stops reading at the third turn")
			}},
		{"spend cap", turn + assistant("a", 0.6, "toolUse", "") + turn + assistant("b", 0.6, "stop", ""),
			runner.Caps{SpendUSD: 1}, func(t *testing.T, r runner.AgentResult, c pairbench.Cap) {
				assert.Equal(t, pairbench.CapSpend, c)
				assert.InDelta(t, 1.2, r.Cost, 1e-9)
			}},
		{"tool calls", turn + line(map[string]any{"type": "tool_execution_end", "toolName": "mcp__pairbench__webmcp", "isError": false}) +
			line(map[string]any{"type": "tool_execution_end", "toolName": "read", "isError": true}) + assistant("x", 0.0, "stop", ""),
			runner.Caps{}, func(t *testing.T, r runner.AgentResult, c pairbench.Cap) {
				assert.Equal(t, []runner.ToolCall{{Name: "mcp__pairbench__webmcp"}, {Name: "read", IsError: true}}, r.Calls)
			}},
		{"cut last line and junk", "not json\n" + turn + assistant("ok", 0.0, "stop", "") + `{"type":"message_end","mess`, runner.Caps{},
			func(t *testing.T, r runner.AgentResult, c pairbench.Cap) {
				assert.Equal(t, "ok", r.Final)
				assert.Equal(t, 1, r.Turns)
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := NewStream(tc.caps, nil)
			c, err := s.Feed(strings.NewReader(tc.in))
			require.NoError(t, err)
			tc.check(t, s.Result(), c)
		})
	}
}

// TestStreamStartedOnce: Started fires at the first turn_start, before the
// turn's records, and never again.
func TestStreamStartedOnce(t *testing.T) {
	in := `{"type":"session"}
{"type":"agent_start"}
{"type":"turn_start"}
{"type":"turn_end"}
{"type":"turn_start"}
{"type":"turn_end"}
`
	s := NewStream(runner.Caps{}, nil)
	var calls, turnsAtCall int
	s.Started = func() { calls++; turnsAtCall = s.Result().Turns }
	_, err := s.Feed(strings.NewReader(in))
	require.NoError(t, err)
	assert.Equal(t, 1, calls)
	assert.Equal(t, 0, turnsAtCall, "called as the first turn starts")
	assert.Equal(t, 2, s.Result().Turns)
}
