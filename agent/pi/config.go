package pi

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/pairbench/pairbench/runner"
)

// agentDirFiles returns the files of pi's agent directory for a task: only
// the MCP servers and the model configuration, so a user's own pi settings,
// servers and stored logins never apply.
func agentDirFiles(task runner.AgentTask) (map[string][]byte, error) {
	servers := map[string]any{}
	for _, s := range task.MCPServers {
		entry := map[string]any{"exposure": "direct", "timeout": 60}
		if s.Command != "" {
			entry["command"], entry["args"] = s.Command, s.Args
		} else {
			entry["url"] = s.URL
		}
		servers[s.Name] = entry
	}
	mcp, err := json.MarshalIndent(map[string]any{"mcpServers": servers}, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode mcp.json: %w", err)
	}
	files := map[string][]byte{"mcp.json": mcp}

	m := task.Model
	if m.BaseURL != "" {
		provider := map[string]any{
			"baseUrl": m.BaseURL,
			"api":     "openai-completions",
			"models": []any{map[string]any{
				"id": m.ID, "name": m.ID,
				"cost":          map[string]any{"input": m.InputPrice, "output": m.OutputPrice, "cacheRead": 0, "cacheWrite": 0},
				"contextWindow": 128000, "maxTokens": 8192,
			}},
		}
		if m.KeyEnv != "" {
			// pi 1.x reads "$NAME" from the environment, so the key (or the
			// egress proxy's placeholder for it) never lands in a file.
			provider["apiKey"] = "$" + m.KeyEnv
		}
		models, err := json.MarshalIndent(map[string]any{"providers": map[string]any{m.Provider: provider}}, "", "  ")
		if err != nil {
			return nil, fmt.Errorf("encode models.json: %w", err)
		}
		files["models.json"] = models
	}
	return files, nil
}

// writeAgentDir writes the agent directory's files into dir.
func writeAgentDir(dir string, task runner.AgentTask) error {
	files, err := agentDirFiles(task)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create pi agent dir: %w", err)
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return fmt.Errorf("write %s: %w", name, err)
		}
	}
	return nil
}

// args returns pi's command line for a task: JSON mode, no session, no
// context files, skills, prompt templates or extensions except the built-in
// MCP one, no built-in tools, and exactly the allowlisted tools.
func args(task runner.AgentTask) []string {
	a := []string{
		"--mode", "json",
		"--no-session",
		"--no-context-files",
		"--no-skills",
		"--no-prompt-templates",
		"--no-themes",
		"--no-extensions", "-e", "builtin:mcp",
		"--no-builtin-tools",
		"--no-approve",
		"--tools", strings.Join(task.Allowlist, ","),
		"--model", task.Model.String(),
	}
	if task.SystemPrompt != "" {
		a = append(a, "--append-system-prompt", task.SystemPrompt)
	}
	// "--" keeps a prompt that starts with "-" from reading as a flag.
	return append(a, "--", task.Prompt)
}
