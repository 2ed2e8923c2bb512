package claudecode

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench/rundir"
	"github.com/pairbench/pairbench/sandbox"
)

// TestRouteNamesTheKeyHeader: the egress proxy swaps the key in the one
// header Claude Code sends it in, X-Api-Key for an API key and
// Authorization for an OAuth token, so a placeholder anywhere else is
// refused.
func TestRouteNamesTheKeyHeader(t *testing.T) {
	m := rundir.Model{Provider: "anthropic", ID: "claude-x"}

	r, keyEnv, err := route(m, []string{"ANTHROPIC_API_KEY=sk-ant-real", "CLAUDE_CODE_OAUTH_TOKEN=oauth-real"})
	require.NoError(t, err)
	assert.Equal(t, "ANTHROPIC_API_KEY", keyEnv, "an API key wins over a token")
	assert.Equal(t, []sandbox.Secret{{Name: "ANTHROPIC_API_KEY", Value: "sk-ant-real",
		Hosts: []string{"api.anthropic.com"}, Headers: []string{"X-Api-Key"}}}, r.Secrets)

	r, keyEnv, err = route(m, []string{"CLAUDE_CODE_OAUTH_TOKEN=oauth-real"})
	require.NoError(t, err)
	assert.Equal(t, "CLAUDE_CODE_OAUTH_TOKEN", keyEnv)
	assert.Equal(t, []sandbox.Secret{{Name: "CLAUDE_CODE_OAUTH_TOKEN", Value: "oauth-real",
		Hosts: []string{"api.anthropic.com"}, Headers: []string{"Authorization"}}}, r.Secrets)

	m.KeyEnv, m.BaseURL = "MY_GATEWAY_KEY", "https://gateway.example/v1"
	r, keyEnv, err = route(m, []string{"MY_GATEWAY_KEY=gw-real"})
	require.NoError(t, err)
	assert.Equal(t, "MY_GATEWAY_KEY", keyEnv)
	assert.Equal(t, []sandbox.Secret{{Name: "MY_GATEWAY_KEY", Value: "gw-real",
		Hosts: []string{"gateway.example"}, Headers: []string{"X-Api-Key"}}}, r.Secrets,
		"a key under another name is still sent as X-Api-Key")

	_, _, err = route(rundir.Model{Provider: "anthropic", ID: "claude-x"}, nil)
	assert.EqualError(t, err, "model anthropic/claude-x: neither ANTHROPIC_API_KEY nor CLAUDE_CODE_OAUTH_TOKEN is set")
}

// TestPolicyCapsTempAndWorkspace: the agent's sandbox has /tmp and its
// workspace capped, so a hostile page steering it cannot fill the runner's
// temporary directory (sandbox.TestEscapeAgentFillsTheTempFileSystem).
func TestPolicyCapsTempAndWorkspace(t *testing.T) {
	assert.Equal(t, sandbox.AgentLimits, (&Agent{}).policy(nil, nil).Limits)
}
