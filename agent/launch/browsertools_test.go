package launch_test

import (
	"bufio"
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench/agent/launch"
	"github.com/pairbench/pairbench/internal/realstack"
	"github.com/pairbench/pairbench/runner"
)

// TestBrowserToolArgsAreThePinnedPlaywrightMCPs asks the pinned Playwright
// MCP for its tools (MCP over stdio, tools/list) and checks that
// runner.BrowserToolArgs, which validate checks baseline steps against,
// has each browser tool's arguments as it declares them.
func TestBrowserToolArgsAreThePinnedPlaywrightMCPs(t *testing.T) {
	realstack.Need(t, realstack.NodeTools)
	tools := launch.Tools{NodeModules: realstack.NodeModules(t)}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, tools.Node(), filepath.Join(tools.PlaywrightMCP(), "cli.js"), "--no-webmcp")
	in, err := cmd.StdinPipe()
	require.NoError(t, err)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { in.Close(); cmd.Process.Kill(); cmd.Wait() })
	for _, msg := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"pairbench-test","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
	} {
		_, err := in.Write([]byte(msg + "\n"))
		require.NoError(t, err)
	}
	lines := bufio.NewScanner(out)
	lines.Buffer(nil, 8<<20)
	var listed struct {
		ID     int `json:"id"`
		Result struct {
			Tools []struct {
				Name        string `json:"name"`
				InputSchema struct {
					Properties map[string]json.RawMessage `json:"properties"`
					Required   []string                   `json:"required"`
				} `json:"inputSchema"`
			} `json:"tools"`
		} `json:"result"`
	}
	for listed.ID != 2 && lines.Scan() {
		if strings.Contains(lines.Text(), `"id":2`) {
			require.NoError(t, json.Unmarshal(lines.Bytes(), &listed))
		}
	}
	require.Equal(t, 2, listed.ID, "Playwright MCP answered tools/list: %v", lines.Err())
	declared := map[string]runner.ToolArgs{}
	for _, tool := range listed.Result.Tools {
		var known []string
		for name := range tool.InputSchema.Properties {
			known = append(known, name)
		}
		slices.Sort(known)
		required := slices.Sorted(slices.Values(tool.InputSchema.Required))
		declared[tool.Name] = runner.ToolArgs{Known: known, Required: required}
	}
	for _, name := range runner.BrowserTools {
		want, ok := declared[name]
		require.True(t, ok, "Playwright MCP has no tool %s", name)
		got := runner.BrowserToolArgs[name]
		assert.Equal(t, want.Known, slices.Sorted(slices.Values(got.Known)), "%s's arguments", name)
		assert.Equal(t, want.Required, slices.Sorted(slices.Values(got.Required)), "%s's required arguments", name)
	}
	assert.Len(t, runner.BrowserToolArgs, len(runner.BrowserTools), "one entry per browser tool")
}
