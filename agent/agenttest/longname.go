package agenttest

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/intents"
	"github.com/pairbench/pairbench/rundir"
)

// longToolName is a WebMCP tool name of 60 characters: within what the
// WebMCP API allows, and past Anthropic's 64-character limit on a model's
// tool names once an MCP prefix such as Claude Code's mcp__<server>__ is
// put in front of it.
const longToolName = "list_cities_with_their_weather_for_the_whole_week_ahead_now1"

// longNames checks that a page tool's name never becomes a tool name of
// the agent: pairbench hands the agent one MCP tool, webmcp, and the page's
// tools travel as its arguments, so a 60-character tool name benches with
// every agent and every name the agent declares stays within 64
// characters (docs/registry.md, "Tool names").
func (b *bench) longNames(t *testing.T) {
	require.Len(t, longToolName, 60)
	long := *b
	long.reg = longNameRegistry(t, b.reg.Root)
	row, _ := long.trial(t, "weather-high-oslo", pairbench.Treatment, rundir.PlanCaps{TimeS: roomyTimeS, Turns: 25, SpendUSD: 1}, nil)
	assert.Equal(t, pairbench.Correct, row.Outcome, row.Reason)
	assert.True(t, row.Adopted, "the agent called the page's tool")
	require.NotEmpty(t, row.WebMCP)
	assert.Equal(t, longToolName, row.WebMCP[0].Tool)
	require.NotEmpty(t, row.ToolsDeclared)
	for _, name := range row.ToolsDeclared {
		assert.LessOrEqual(t, len(name), 64, "the agent declared %s", name)
		assert.NotContains(t, name, longToolName, "a page tool's name is never the agent's own tool name")
	}
}

// longNameRegistry copies the example registry at root with weather's
// list_cities tool renamed to longToolName.
func longNameRegistry(t *testing.T, root string) *intents.Registry {
	t.Helper()
	dst := t.TempDir()
	require.NoError(t, filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel = strings.ReplaceAll(rel, "list_cities", longToolName)
		return os.WriteFile(filepath.Join(dst, rel), []byte(strings.ReplaceAll(string(data), "list_cities", longToolName)), 0o644)
	}))
	reg, err := intents.Load(dst)
	require.NoError(t, err)
	return reg
}
