package agents

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/pairbench/pairbench/runner"
)

// TestCheck: bad input is one line naming what is wrong, before anything
// is read from disk.
func TestCheck(t *testing.T) {
	scripted := runner.Model{Provider: "pairbench", ID: "pairbench-scripted", Scripted: true}
	for _, name := range Names {
		assert.NoError(t, Check(name, scripted), "every agent takes the scripted model")
	}
	assert.EqualError(t, Check("aider", scripted), `unknown agent "aider"; want one of pi, claude-code, codex`)
	assert.ErrorContains(t, Check("claude-code", runner.Model{Provider: "openai", ID: "gpt-5"}), "only the Anthropic Messages API")
	assert.ErrorContains(t, Check("codex", runner.Model{Provider: "anthropic", ID: "claude-sonnet-4-5"}), "only the OpenAI Responses API")
	assert.NoError(t, Check("codex", runner.Model{Provider: "local", ID: "m", BaseURL: "http://127.0.0.1:8000/v1"}), "a base URL that speaks its API")
	assert.NoError(t, Check("pi", runner.Model{Provider: "google", ID: "gemini-x"}))
	assert.Equal(t, []string{"list_mcp_resource_templates", "list_mcp_resources", "read_mcp_resource", "request_user_input"}, HarnessTools("codex"))
	assert.Empty(t, HarnessTools("claude-code"))
}
