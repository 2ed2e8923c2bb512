package claudecode_test

import (
	"testing"

	"github.com/pairbench/pairbench/agent/agenttest"
	"github.com/pairbench/pairbench/agent/claudecode"
	"github.com/pairbench/pairbench/rundir"
)

// transcript has the shapes of Claude Code's stream-json records, cut down
// to the fields that matter.
const transcript = `{"type":"system","subtype":"init","tools":["mcp__pairbench__webmcp"]}
{"type":"user","message":{"role":"user","content":"What is today's high in Oslo?"}}
{"type":"assistant","message":{"content":[{"type":"thinking","thinking":"Tools first."},{"id":"toolu_1","input":{"action":"list"},"name":"mcp__pairbench__webmcp","type":"tool_use"}],"role":"assistant"}}
{"type":"user","message":{"role":"user","content":[{"tool_use_id":"toolu_1","type":"tool_result","content":"{\"tools\":[{\"name\":\"find_books\"}]}"}]}}
{"type":"assistant","message":{"content":[{"id":"toolu_2","input":{"action":"invoke","tool":"find_books","arguments":{"author":"Ada Quill"}},"name":"mcp__pairbench__webmcp","type":"tool_use"}],"role":"assistant"}}
{"type":"user","message":{"role":"user","content":[{"tool_use_id":"toolu_2","type":"tool_result","content":[{"type":"text","text":"boom"}],"is_error":true}]}}
{"type":"rate_limit_event","rate_limit_info":{}}
{"type":"assistant","message":{"content":[{"text":"The cheapest is Paper Boats.","type":"text"}],"role":"assistant"}}
{"type":"result","subtype":"error_during_execution","is_error":true,"result":"stopped"}
{"duration_api_ms":633,"stop_reason":"end_turn","total_cost_usd":0.008856}
{"type":"brand_new","x":1}
`

func TestSteps(t *testing.T) {
	agenttest.Decodes(t, claudecode.NewSteps(), transcript, nil, []agenttest.Want{
		{Kind: rundir.TaskStep, Text: "today's high in Oslo"},
		{Kind: rundir.ThinkingStep, Turn: 1, Text: "Tools first."},
		{Kind: rundir.CallStep, Turn: 1, Tool: "mcp__pairbench__webmcp", Text: "list"},
		{Kind: rundir.ResultStep, Tool: "mcp__pairbench__webmcp", Text: "find_books"},
		{Kind: rundir.CallStep, Turn: 2, Tool: "mcp__pairbench__webmcp", Text: "Ada Quill"},
		{Kind: rundir.ResultStep, Tool: "mcp__pairbench__webmcp", Text: "boom", Err: true},
		{Kind: rundir.TextStep, Turn: 3, Text: "Paper Boats"},
		{Kind: rundir.NoteStep, Text: `the agent ended with an error: "stopped"`},
		{Kind: rundir.NoteStep, Text: `"brand_new"`},
	})
}
