package codex

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench/rundir"
	"github.com/pairbench/pairbench/sandbox"
)

// TestRouteNamesTheKeyHeader: the egress proxy swaps the key only in
// Authorization, the header Codex sends it in, so a placeholder anywhere
// else is refused.
func TestRouteNamesTheKeyHeader(t *testing.T) {
	r, err := route(rundir.Model{Provider: "openai", ID: "gpt-x"}, []string{"OPENAI_API_KEY=sk-real"})
	require.NoError(t, err)
	assert.Equal(t, []sandbox.Secret{{Name: "OPENAI_API_KEY", Value: "sk-real",
		Hosts: []string{"api.openai.com"}, Headers: []string{"Authorization"}}}, r.Secrets)

	_, err = route(rundir.Model{Provider: "openai", ID: "gpt-x"}, nil)
	assert.EqualError(t, err, "model openai/gpt-x: OPENAI_API_KEY is not set")
}

// TestPolicyCapsTempAndWorkspace: the agent's sandbox has /tmp and its
// workspace capped, so a hostile page steering it cannot fill the runner's
// temporary directory (sandbox.TestEscapeAgentFillsTheTempFileSystem).
func TestPolicyCapsTempAndWorkspace(t *testing.T) {
	assert.Equal(t, sandbox.AgentLimits, (&Agent{}).policy(nil, nil).Limits)
}
