package model

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/intents"
	"github.com/pairbench/pairbench/internal/realstack"
)

// installed returns the path of a pinned tool under tools/node_modules,
// failing the test when scripts/setup.sh has not installed it.
func installed(t *testing.T, rel string) string {
	t.Helper()
	realstack.Need(t, realstack.NodeTools)
	p := filepath.Join(realstack.NodeModules(t), rel)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%s is not installed; scripts/setup.sh installs it", p)
	}
	return p
}

// jsonLines decodes every line of out.
func jsonLines(t *testing.T, out []byte) []map[string]any {
	t.Helper()
	var evs []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var ev map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &ev), "line %q", sc.Text())
		evs = append(evs, ev)
	}
	require.NoError(t, sc.Err())
	return evs
}

// pageWorkspace is a workspace whose page.txt holds the books page.
func pageWorkspace(t *testing.T) string {
	t.Helper()
	ws := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(ws, "page.txt"), []byte("Books by Frank Herbert\nDune — $9.99\nChildren of Dune — $12.50\n"), 0o644))
	return ws
}

// TestWithClaudeCode runs the real Claude Code against the scripted model's
// Messages API: it must take the streamed tool_use, run the tool, send the
// tool_result back and take the streamed answer, counting tokens on every
// turn. The "page" is a file read with Claude Code's built-in Read tool.
func TestWithClaudeCode(t *testing.T) {
	claude := installed(t, "@anthropic-ai/claude-code-linux-x64/claude")
	in := booksIntent()
	ws := pageWorkspace(t)
	in.Baseline.Steps = []intents.Step{{Tool: "Read", Args: map[string]any{"file_path": filepath.Join(ws, "page.txt")}}}
	ts := httptest.NewServer(New([]intents.Intent{in}, Options{}))
	defer ts.Close()

	home := t.TempDir()
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, claude, "-p", "--output-format", "stream-json", "--verbose",
		"--setting-sources", "", "--strict-mcp-config", "--tools", "Read", "--allowedTools", "Read", "--permission-mode", "dontAsk",
		"--no-session-persistence", "--model", ID, "--", booksPrompt)
	cmd.Dir = ws
	cmd.Env = []string{"HOME=" + home, "CLAUDE_CONFIG_DIR=" + filepath.Join(home, ".claude"), "PATH=/usr/bin:/bin",
		"ANTHROPIC_BASE_URL=" + ts.URL, "ANTHROPIC_API_KEY=scripted-model-takes-any-key",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1"}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "claude failed: %s\n%s", stderr.String(), out)

	var assistant []map[string]any
	var result map[string]any
	for _, ev := range jsonLines(t, out) {
		switch ev["type"] {
		case "assistant":
			assistant = append(assistant, ev["message"].(map[string]any))
		case "result":
			result = ev
		}
	}
	require.Len(t, assistant, 2, "a tool call, then the answer")
	first := assistant[0]["content"].([]any)[0].(map[string]any)
	assert.Equal(t, "tool_use", first["type"])
	assert.Equal(t, "Read", first["name"])
	for _, m := range assistant {
		u := m["usage"].(map[string]any)
		assert.Positive(t, u["input_tokens"], "input tokens are counted")
		assert.Positive(t, u["output_tokens"], "output tokens are counted")
	}
	require.NotNil(t, result)
	assert.Equal(t, false, result["is_error"], "%v", result)
	assert.EqualValues(t, 2, result["num_turns"])
	res := gradeFinal(t, result["result"].(string))
	assert.Equal(t, pairbench.Correct, res.Outcome, res.Reason)
}

// TestWithCodex runs the real Codex against the scripted model's Responses
// API: it must take the streamed function call, run it, send its output back
// and take the streamed answer, reporting token usage. The "page" is read
// with Codex's own shell tool.
func TestWithCodex(t *testing.T) {
	codex := installed(t, "@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex")
	in := booksIntent()
	in.Baseline.Steps = []intents.Step{{Tool: "exec_command", Args: map[string]any{"cmd": "cat page.txt"}}}
	ts := httptest.NewServer(New([]intents.Intent{in}, Options{}))
	defer ts.Close()

	home := t.TempDir()
	ws := pageWorkspace(t)
	config := `model = "` + ID + `"
model_provider = "scripted"
[model_providers.scripted]
name = "pairbench scripted"
base_url = "` + ts.URL + `/v1"
env_key = "SCRIPTED_KEY"
wire_api = "responses"
`
	require.NoError(t, os.WriteFile(filepath.Join(home, "config.toml"), []byte(config), 0o644))
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, codex, "exec", "--json", "--skip-git-repo-check", "--ephemeral",
		"--dangerously-bypass-approvals-and-sandbox", "--", booksPrompt)
	cmd.Dir = ws
	cmd.Env = []string{"HOME=" + home, "CODEX_HOME=" + home, "PATH=/usr/bin:/bin", "SCRIPTED_KEY=any"}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "codex failed: %s\n%s", stderr.String(), out)

	var commands []map[string]any
	var final string
	var usage map[string]any
	for _, ev := range jsonLines(t, out) {
		item, _ := ev["item"].(map[string]any)
		switch {
		case ev["type"] == "item.completed" && item["type"] == "command_execution":
			commands = append(commands, item)
		case ev["type"] == "item.completed" && item["type"] == "agent_message":
			final = item["text"].(string)
		case ev["type"] == "turn.completed":
			usage = ev["usage"].(map[string]any)
		}
	}
	require.Len(t, commands, 1, "one tool call: %s", out)
	assert.Contains(t, commands[0]["aggregated_output"], "Dune — $9.99")
	require.NotNil(t, usage, "codex reports usage")
	assert.Positive(t, usage["input_tokens"])
	assert.Positive(t, usage["output_tokens"])
	res := gradeFinal(t, final)
	assert.Equal(t, pairbench.Correct, res.Outcome, res.Reason)
}
