package pi_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/pairbench/pairbench/agent/agenttest"
	"github.com/pairbench/pairbench/agent/pi"
	"github.com/pairbench/pairbench/rundir"
)

// transcript has the shapes of pi 1.6's message_end records, cut down to
// the fields that matter.
const transcript = `{"type":"message_end","message":{"role":"system","content":"","sections":{"preamble":"You are a coding assistant"}}}
{"type":"message_end","message":{"role":"user","content":[{"type":"text","text":"What is today's high in Oslo?"}]}}
{"type":"message_end","message":{"role":"assistant","content":[{"type":"toolCall","id":"call_1","name":"mcp__pairbench__webmcp","arguments":{"action":"list"}}],"stopReason":"toolUse"}}
{"type":"message_end","message":{"role":"toolResult","toolCallId":"call_1","toolName":"mcp__pairbench__webmcp","content":[{"type":"text","text":"{\"tools\":[]}"}],"isError":false}}
{"type":"message_end","message":{"role":"assistant","content":[{"type":"thinking","thinking":"The page has no tools."},{"type":"toolCall","id":"call_2","name":"mcp__browser__browser_snapshot","arguments":{}}]}}
{"type":"message_end","message":{"role":"toolResult","toolCallId":"call_2","toolName":"mcp__browser__browser_snapshot","content":[{"type":"text","text":"page gone"}],"isError":true}}
{"type":"message_end","message":{"role":"assistant","content":[{"type":"text","text":"` + "```json\\n{\\\"high_c\\\": 4}\\n```" + `"}],"stopReason":"stop","errorMessage":"overloaded"}}
not json <b>
{"type":"brand_new","x":1}
`

func TestSteps(t *testing.T) {
	steps := agenttest.Decodes(t, pi.NewSteps(), transcript, []int64{10, 20, 30, 40}, []agenttest.Want{
		{Kind: rundir.TaskStep, Text: "today's high in Oslo"},
		{Kind: rundir.CallStep, Turn: 1, Tool: "mcp__pairbench__webmcp", Text: `"action":"list"`},
		{Kind: rundir.ResultStep, Tool: "mcp__pairbench__webmcp", Text: `{"tools":[]}`},
		{Kind: rundir.ThinkingStep, Turn: 2, Text: "no tools"},
		{Kind: rundir.CallStep, Turn: 2, Tool: "mcp__browser__browser_snapshot", Text: "{}"},
		{Kind: rundir.ResultStep, Tool: "mcp__browser__browser_snapshot", Text: "page gone", Err: true},
		{Kind: rundir.TextStep, Turn: 3, Text: `"high_c": 4`},
		{Kind: rundir.NoteStep, Text: "the model request failed: overloaded"},
		{Kind: rundir.NoteStep, Text: "not JSON: not json <b>"},
		{Kind: rundir.NoteStep, Text: `"brand_new"`},
	})
	assert.Equal(t, int64(20), steps[0].AtMS, "the user message is line 2")
	assert.Equal(t, int64(40), steps[2].AtMS, "the result is line 4")
	assert.Equal(t, int64(-1), steps[5].AtMS, "no time for line 6")
}
