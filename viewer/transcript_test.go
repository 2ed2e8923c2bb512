package viewer

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The lines below have the shapes each agent's transcript.jsonl has (pi
// 1.6's message_end records, Claude Code's stream-json, Codex's exec
// events), cut down to the fields that matter.

const piTranscript = `{"type":"message_end","message":{"role":"system","content":"","sections":{"preamble":"You are a coding assistant"}}}
{"type":"message_end","message":{"role":"user","content":[{"type":"text","text":"What is today's high in Oslo?"}]}}
{"type":"message_end","message":{"role":"assistant","content":[{"type":"toolCall","id":"call_1","name":"mcp__pairbench__webmcp","arguments":{"action":"list"}}],"stopReason":"toolUse"}}
{"type":"message_end","message":{"role":"toolResult","toolCallId":"call_1","toolName":"mcp__pairbench__webmcp","content":[{"type":"text","text":"{\"tools\":[]}"}],"isError":false}}
{"type":"message_end","message":{"role":"assistant","content":[{"type":"thinking","thinking":"The page has no tools."},{"type":"toolCall","id":"call_2","name":"mcp__browser__browser_snapshot","arguments":{}}]}}
{"type":"message_end","message":{"role":"toolResult","toolCallId":"call_2","toolName":"mcp__browser__browser_snapshot","content":[{"type":"text","text":"page gone"}],"isError":true}}
{"type":"message_end","message":{"role":"assistant","content":[{"type":"text","text":"` + "```json\\n{\\\"high_c\\\": 4}\\n```" + `"}],"stopReason":"stop"}}
`

const claudeTranscript = `{"type":"system","subtype":"init","tools":["mcp__pairbench__webmcp"]}
{"type":"assistant","message":{"content":[{"id":"toolu_1","input":{"action":"list"},"name":"mcp__pairbench__webmcp","type":"tool_use"}],"role":"assistant"}}
{"type":"user","message":{"role":"user","content":[{"tool_use_id":"toolu_1","type":"tool_result","content":"{\"tools\":[{\"name\":\"find_books\"}]}"}]}}
{"type":"assistant","message":{"content":[{"id":"toolu_2","input":{"action":"invoke","tool":"find_books","arguments":{"author":"Ada Quill"}},"name":"mcp__pairbench__webmcp","type":"tool_use"}],"role":"assistant"}}
{"type":"user","message":{"role":"user","content":[{"tool_use_id":"toolu_2","type":"tool_result","content":[{"type":"text","text":"boom"}],"is_error":true}]}}
{"type":"assistant","message":{"content":[{"text":"The cheapest is Paper Boats.","type":"text"}],"role":"assistant"}}
{"duration_api_ms":633,"stop_reason":"end_turn","total_cost_usd":0.008856}
`

const codexTranscript = `{"type":"thread.started","thread_id":"t1"}
{"type":"item.completed","item":{"id":"item_0","type":"error","message":"Model metadata for pairbench-scripted not found."}}
{"type":"turn.started"}
{"type":"item.started","item":{"id":"item_3","type":"mcp_tool_call","server":"pairbench","tool":"webmcp","arguments":{"action":"list"},"result":null,"error":null,"status":"in_progress"}}
{"type":"item.completed","item":{"id":"item_3","type":"mcp_tool_call","server":"pairbench","tool":"webmcp","arguments":{"action":"list"},"result":{"content":[{"type":"text","text":"{\"tools\":[]}"}]},"error":null,"status":"completed"}}
{"type":"item.completed","item":{"id":"item_4","type":"mcp_tool_call","server":"browser","tool":"browser_click","arguments":{"ref":"e1"},"result":null,"error":{"message":"no such element"},"status":"failed"}}
{"type":"item.completed","item":{"id":"item_5","type":"agent_message","text":"Done."}}
{"type":"turn.completed","usage":{"input_tokens":16486}}
`

type want struct {
	kind stepKind
	turn int
	tool string
	text string
	err  bool
}

func checkSteps(t *testing.T, got []step, wants []want) {
	t.Helper()
	require.Len(t, got, len(wants))
	for i, w := range wants {
		assert.Equal(t, w.kind, got[i].Kind, "step %d", i)
		assert.Equal(t, w.turn, got[i].Turn, "step %d", i)
		assert.Equal(t, w.tool, got[i].Tool, "step %d", i)
		assert.Contains(t, got[i].Text, w.text, "step %d", i)
		assert.Equal(t, w.err, got[i].Error, "step %d", i)
	}
}

func TestTranscriptPi(t *testing.T) {
	steps, err := readTranscript(strings.NewReader(piTranscript), []int64{10, 20, 30, 40})
	require.NoError(t, err)
	checkSteps(t, steps, []want{
		{kind: stepTask, text: "today's high in Oslo"},
		{kind: stepCall, turn: 1, tool: "mcp__pairbench__webmcp", text: "\"action\": \"list\""},
		{kind: stepResult, tool: "mcp__pairbench__webmcp", text: "\"tools\": []"},
		{kind: stepThinking, turn: 2, text: "no tools"},
		{kind: stepCall, turn: 2, tool: "mcp__browser__browser_snapshot", text: "{}"},
		{kind: stepResult, tool: "mcp__browser__browser_snapshot", text: "page gone", err: true},
		{kind: stepText, turn: 3, text: `"high_c": 4`},
	})
	assert.Equal(t, int64(20), steps[0].AtMS, "the user message is line 2")
	assert.Equal(t, int64(-1), steps[5].AtMS, "no time for line 6")
}

func TestTranscriptClaudeCode(t *testing.T) {
	steps, err := readTranscript(strings.NewReader(claudeTranscript), nil)
	require.NoError(t, err)
	checkSteps(t, steps, []want{
		{kind: stepCall, turn: 1, tool: "mcp__pairbench__webmcp", text: "list"},
		{kind: stepResult, tool: "mcp__pairbench__webmcp", text: "find_books"},
		{kind: stepCall, turn: 2, tool: "mcp__pairbench__webmcp", text: "Ada Quill"},
		{kind: stepResult, tool: "mcp__pairbench__webmcp", text: "boom", err: true},
		{kind: stepText, turn: 3, text: "Paper Boats"},
	})
}

func TestTranscriptCodex(t *testing.T) {
	steps, err := readTranscript(strings.NewReader(codexTranscript), nil)
	require.NoError(t, err)
	checkSteps(t, steps, []want{
		{kind: stepNote, text: "Model metadata"},
		{kind: stepCall, turn: 1, tool: "mcp__pairbench__webmcp", text: "list"},
		{kind: stepResult, tool: "mcp__pairbench__webmcp", text: "\"tools\": []"},
		{kind: stepCall, turn: 2, tool: "mcp__browser__browser_click", text: "e1"},
		{kind: stepResult, tool: "mcp__browser__browser_click", text: "no such element", err: true},
		{kind: stepText, turn: 3, text: "Done."},
	})
}

func TestTranscriptKeepsWhatItDoesNotKnow(t *testing.T) {
	steps, err := readTranscript(strings.NewReader("not json <b>\n{\"type\":\"brand_new\",\"x\":1}\n\n"), nil)
	require.NoError(t, err)
	checkSteps(t, steps, []want{
		{kind: stepNote, text: "not JSON: not json <b>"},
		{kind: stepNote, text: `"brand_new"`},
	})
}

func TestTrimKeepsRunes(t *testing.T) {
	s, n := trim(strings.Repeat("ø", 10), 4)
	assert.Equal(t, "øøøø", s)
	assert.Equal(t, 6, n)
	s, n = trim("short", 10)
	assert.Equal(t, "short", s)
	assert.Zero(t, n)
}

func TestSlugStaysInside(t *testing.T) {
	assert.Equal(t, "books-cheapest", slug("books-cheapest"))
	for _, id := range []string{"../../etc", "a/b", "", ".hidden", "x-abc", `<img src=x>`} {
		s := slug(id)
		assert.Regexp(t, `^x-[0-9a-f]{16}$`, s, id)
	}
	assert.NotEqual(t, slug("a/b"), slug("a/c"))
}
