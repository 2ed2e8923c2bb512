package agent

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/pairbench/pairbench/rundir"
)

// TestCheck: bad input is one line naming what is wrong, before anything
// is read from disk.
func TestCheck(t *testing.T) {
	scripted := rundir.Model{Provider: "pairbench", ID: "pairbench-scripted", Scripted: true, KeyEnv: "PAIRBENCH_MODEL_KEY"}
	for _, name := range Names {
		assert.NoError(t, Check(name, scripted, nil), "every agent takes the scripted model, with no key")
	}
	assert.EqualError(t, Check("aider", scripted, nil), `unknown agent "aider"; want one of pi, claude-code, codex`)
	assert.EqualError(t, Check("", scripted, nil), `unknown agent ""; want one of pi, claude-code, codex`)

	openai := rundir.Model{Provider: "openai", ID: "gpt-5"}
	anthropic := rundir.Model{Provider: "anthropic", ID: "claude-sonnet-4-5"}
	keys := []string{"OPENAI_API_KEY=sk-1", "ANTHROPIC_API_KEY=sk-2"}
	assert.ErrorContains(t, Check("claude-code", openai, keys), "only the Anthropic Messages API")
	assert.ErrorContains(t, Check("codex", anthropic, keys), "only the OpenAI Responses API")
	assert.NoError(t, Check("claude-code", anthropic, keys))
	assert.NoError(t, Check("codex", openai, keys))
	assert.NoError(t, Check("pi", rundir.Model{Provider: "google", ID: "gemini-x"}, []string{"GEMINI_API_KEY=g"}))

	// A missing key, for each agent.
	assert.EqualError(t, Check("pi", openai, nil), "model openai/gpt-5: OPENAI_API_KEY is not set")
	assert.EqualError(t, Check("codex", openai, []string{"ANTHROPIC_API_KEY=sk-2"}), "model openai/gpt-5: OPENAI_API_KEY is not set")
	assert.EqualError(t, Check("claude-code", anthropic, []string{"OPENAI_API_KEY=sk-1"}),
		"model anthropic/claude-sonnet-4-5: neither ANTHROPIC_API_KEY nor CLAUDE_CODE_OAUTH_TOKEN is set")
	assert.NoError(t, Check("claude-code", anthropic, []string{"CLAUDE_CODE_OAUTH_TOKEN=tok"}), "a subscription token will do")
	assert.EqualError(t, Check("pi", rundir.Model{Provider: "google", ID: "gemini-x"}, keys), "model google/gemini-x: GEMINI_API_KEY is not set")

	// A server of the agent's own API at a base URL; its key still counts.
	local := rundir.Model{Provider: "local", ID: "m", BaseURL: "http://127.0.0.1:8000/v1"}
	assert.NoError(t, Check("codex", local, keys), "a base URL that speaks its API")
	assert.ErrorContains(t, Check("pi", rundir.Model{Provider: "nowhere", ID: "x"}, keys), "unknown provider")

	assert.Equal(t, []string{"list_mcp_resource_templates", "list_mcp_resources", "read_mcp_resource", "request_user_input"}, HarnessTools("codex"))
	assert.Empty(t, HarnessTools("claude-code"))
	assert.Empty(t, HarnessTools("pi"))
}
