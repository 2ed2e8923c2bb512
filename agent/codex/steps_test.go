package codex_test

import (
	"testing"

	"github.com/pairbench/pairbench/agent/agenttest"
	"github.com/pairbench/pairbench/agent/codex"
	"github.com/pairbench/pairbench/rundir"
)

// transcript has the shapes of Codex's exec --json events, cut down to the
// fields that matter.
const transcript = `{"type":"thread.started","thread_id":"t1"}
{"type":"item.completed","item":{"id":"item_0","type":"error","message":"Model metadata for pairbench-scripted not found."}}
{"type":"turn.started"}
{"type":"item.completed","item":{"id":"item_1","type":"reasoning","text":"Tools first."}}
{"type":"item.started","item":{"id":"item_3","type":"mcp_tool_call","server":"pairbench","tool":"webmcp","arguments":{"action":"list"},"result":null,"error":null,"status":"in_progress"}}
{"type":"item.completed","item":{"id":"item_3","type":"mcp_tool_call","server":"pairbench","tool":"webmcp","arguments":{"action":"list"},"result":{"content":[{"type":"text","text":"{\"tools\":[]}"}]},"error":null,"status":"completed"}}
{"type":"item.completed","item":{"id":"item_4","type":"mcp_tool_call","server":"browser","tool":"browser_click","arguments":{"ref":"e1"},"result":null,"error":{"message":"no such element"},"status":"failed"}}
{"type":"item.completed","item":{"id":"item_5","type":"command_execution","command":"ls /","aggregated_output":"denied","exit_code":1}}
{"type":"item.completed","item":{"id":"item_6","type":"agent_message","text":"Done."}}
{"type":"item.completed","item":{"id":"item_7","type":"todo_list","items":[]}}
{"type":"turn.completed","usage":{"input_tokens":16486}}
{"type":"turn.failed","error":{"message":"stream disconnected"}}
`

func TestSteps(t *testing.T) {
	agenttest.Decodes(t, codex.NewSteps(), transcript, nil, []agenttest.Want{
		{Kind: rundir.NoteStep, Text: "Model metadata"},
		{Kind: rundir.ThinkingStep, Text: "Tools first."},
		{Kind: rundir.CallStep, Turn: 1, Tool: "mcp__pairbench__webmcp", Text: "list"},
		{Kind: rundir.ResultStep, Tool: "mcp__pairbench__webmcp", Text: `{"tools":[]}`},
		{Kind: rundir.CallStep, Turn: 2, Tool: "mcp__browser__browser_click", Text: "e1"},
		{Kind: rundir.ResultStep, Tool: "mcp__browser__browser_click", Text: "no such element", Err: true},
		{Kind: rundir.CallStep, Turn: 3, Tool: "shell", Text: "ls /"},
		{Kind: rundir.ResultStep, Tool: "shell", Text: "denied", Err: true},
		{Kind: rundir.TextStep, Turn: 4, Text: "Done."},
		{Kind: rundir.NoteStep, Text: `"todo_list"`},
		{Kind: rundir.NoteStep, Text: "stream disconnected"},
	})
}
