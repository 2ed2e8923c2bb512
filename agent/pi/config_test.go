package pi

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench/agent/launch"
	"github.com/pairbench/pairbench/rundir"
	"github.com/pairbench/pairbench/runner"
	"github.com/pairbench/pairbench/sandbox"
)

func TestAgentDirHoldsOnlyTheFrozenConfig(t *testing.T) {
	task := runner.AgentTask{
		Model: rundir.Model{Provider: "pairbench", ID: "pairbench-scripted", BaseURL: "http://127.0.0.1:9/v1",
			KeyEnv: "PAIRBENCH_MODEL_KEY", InputPrice: 3, OutputPrice: 15},
		MCPServers: []runner.MCPServer{
			{Name: "browser", Command: "/opt/node", Args: []string{"cli.js", "--cdp-endpoint", "ws://x"}},
			{Name: "pairbench", URL: "http://127.0.0.1:7/mcp"},
		},
	}
	dir := filepath.Join(t.TempDir(), "agent")
	require.NoError(t, writeAgentDir(dir, task))
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	assert.Equal(t, []string{"mcp.json", "models.json"}, names, "nothing else: no settings, no auth, no skills")

	var mcp struct {
		MCPServers map[string]map[string]any `json:"mcpServers"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "mcp.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &mcp))
	assert.Equal(t, "direct", mcp.MCPServers["browser"]["exposure"], "without direct exposure MCP tools never reach the model")
	assert.Equal(t, "/opt/node", mcp.MCPServers["browser"]["command"])
	assert.Equal(t, "http://127.0.0.1:7/mcp", mcp.MCPServers["pairbench"]["url"])

	b, err = os.ReadFile(filepath.Join(dir, "models.json"))
	require.NoError(t, err)
	assert.Contains(t, string(b), `"apiKey": "$PAIRBENCH_MODEL_KEY"`, "the key is read from the environment, never written")
	assert.Contains(t, string(b), `"input": 3`, "priced, so cost is above zero")
}

func TestArgsIsolatePi(t *testing.T) {
	a := args(runner.AgentTask{Prompt: "-starts with a dash", Allowlist: []string{"mcp__x__a", "mcp__x__b"},
		Model: rundir.Model{Provider: "openai", ID: "gpt-x"}})
	for _, flag := range []string{"--no-session", "--no-context-files", "--no-skills", "--no-prompt-templates",
		"--no-extensions", "--no-builtin-tools", "--no-approve"} {
		assert.Contains(t, a, flag)
	}
	i := slices.Index(a, "-e")
	require.GreaterOrEqual(t, i, 0)
	assert.Equal(t, "builtin:mcp", a[i+1], "only the built-in MCP extension")
	i = slices.Index(a, "--tools")
	assert.Equal(t, "mcp__x__a,mcp__x__b", a[i+1])
	assert.Equal(t, []string{"--", "-starts with a dash"}, a[len(a)-2:], "the prompt cannot read as a flag")
}

func TestModelRoute(t *testing.T) {
	env := []string{"OPENAI_API_KEY=sk-real-key-1234", "GEMINI_API_KEY=gm-real-key-5678"}

	r, err := route(rundir.Model{Provider: "openai", ID: "gpt-x"}, env)
	require.NoError(t, err)
	assert.Equal(t, []sandbox.AllowRule{{Host: "api.openai.com", Ports: []int{443}}}, r.Allow)
	assert.Empty(t, r.Forward)
	assert.Equal(t, []sandbox.Secret{{Name: "OPENAI_API_KEY", Value: "sk-real-key-1234", Hosts: []string{"api.openai.com"}}}, r.Secrets,
		"the key is only ever sent to its provider")

	r, err = route(rundir.Model{Provider: "google", ID: "gemini-x"}, env)
	require.NoError(t, err)
	assert.Equal(t, "GEMINI_API_KEY", r.Secrets[0].Name, "google/ reads GEMINI_API_KEY")

	r, err = route(rundir.Model{Provider: "pairbench", ID: "s", Scripted: true,
		BaseURL: "http://127.0.0.1:4567/v1", KeyEnv: "PAIRBENCH_MODEL_KEY"}, env)
	require.NoError(t, err)
	assert.Empty(t, r.Allow)
	assert.Equal(t, []int{4567}, r.Forward, "a model on this host is reached by port forward")
	assert.Empty(t, r.Secrets)

	_, err = route(rundir.Model{Provider: "anthropic", ID: "claude-x"}, env)
	assert.ErrorContains(t, err, "ANTHROPIC_API_KEY is not set")
	_, err = route(rundir.Model{Provider: "nowhere", ID: "x"}, env)
	assert.ErrorContains(t, err, "unknown provider")
	r, err = route(rundir.Model{Provider: "nowhere", ID: "x", BaseURL: "https://llm.example.com:8443/v1", KeyEnv: "OPENAI_API_KEY"}, env)
	require.NoError(t, err)
	assert.Equal(t, []sandbox.AllowRule{{Host: "llm.example.com", Ports: []int{8443}}}, r.Allow)
}

// TestBesideAgentServers: a server with Listen becomes a sandbox service
// and a URL on a port no one else holds inside; the others pass unchanged.
func TestBesideAgentServers(t *testing.T) {
	servers := []runner.MCPServer{
		{Name: "browser", Command: "/opt/node", Args: []string{"cli.js", "--port", "8931"}, Listen: 8931},
		{Name: "pairbench", URL: "http://127.0.0.1:7/mcp"},
		{Name: "stdio", Command: "/opt/tool"},
	}
	out, services := launch.BesideAgent(servers, []int{8932, 8933})
	assert.Equal(t, []runner.MCPServer{
		{Name: "browser", URL: "http://127.0.0.1:8934/mcp"},
		servers[1], servers[2],
	}, out)
	assert.Equal(t, []sandbox.Service{{Args: []string{"/opt/node", "cli.js", "--port", "8931"}, Port: 8934, Backend: 8931}}, services)
}

// TestWarmCacheIsMountedReadOnly: once warm, every run's sandbox gets the
// compile cache as a read-only mount and Node is pointed at it.
func TestWarmCacheIsMountedReadOnly(t *testing.T) {
	a := &Agent{cfg: Config{Node: "/opt/node", Package: "/opt/pi"}}
	p := a.policy(nil, nil)
	assert.NotContains(t, p.Env, "NODE_COMPILE_CACHE", "no cache before Warm")
	assert.Equal(t, sandbox.AgentLimits, p.Limits, "/tmp and the workspace capped (sandbox.TestEscapeAgentFillsTheTempFileSystem)")
	a.cache = "/tmp/pairbench-node-cache-1"
	env := map[string]string{"A": "1"}
	p = a.policy(nil, env)
	assert.Contains(t, p.ReadOnly, a.cache)
	assert.NotEqual(t, a.cache, p.Workspace, "never writable")
	assert.Equal(t, a.cache, p.Env["NODE_COMPILE_CACHE"])
	assert.Equal(t, map[string]string{"A": "1"}, env, "the caller's map is left alone")
}
