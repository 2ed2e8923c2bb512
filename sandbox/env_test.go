package sandbox

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

var hostEnv = []string{
	"ANTHROPIC_API_KEY=sk-ant", "ANTHROPIC_BASE_URL=http://127.0.0.1:9/v1",
	"OPENAI_API_KEY=sk-openai", "GEMINI_API_KEY=gm-key", "GOOGLE_API_KEY=g-key",
	"GH_TOKEN=ghp_x", "AWS_SECRET_ACCESS_KEY=aws", "KERNEL_API_KEY=kernel",
	"HTTPS_PROXY=http://proxy:3128", "no_proxy=localhost", "NODE_EXTRA_CA_CERTS=/etc/ca.pem",
	"HOME=/root", "PATH=/usr/bin", "MISTRAL_API_KEY=m", "bad-name=x", "ANTHROPIC_API_KEY=sk-ant-later",
}

func TestAgentEnv(t *testing.T) {
	common := map[string]string{"HTTPS_PROXY": "http://proxy:3128", "no_proxy": "localhost", "NODE_EXTRA_CA_CERTS": "/etc/ca.pem"}
	with := func(extra map[string]string) map[string]string {
		out := map[string]string{}
		for k, v := range common {
			out[k] = v
		}
		for k, v := range extra {
			out[k] = v
		}
		return out
	}
	cases := []struct {
		model string
		extra []string
		want  map[string]string
	}{
		{"anthropic/claude-haiku", nil, with(map[string]string{"ANTHROPIC_API_KEY": "sk-ant-later", "ANTHROPIC_BASE_URL": "http://127.0.0.1:9/v1"})},
		{"google/gemini-3-flash", nil, with(map[string]string{"GEMINI_API_KEY": "gm-key", "GOOGLE_API_KEY": "g-key"})},
		{"openai/gpt-5", []string{"KERNEL_API_KEY"}, with(map[string]string{"OPENAI_API_KEY": "sk-openai", "KERNEL_API_KEY": "kernel"})},
		{"mistral/large", nil, with(map[string]string{"MISTRAL_API_KEY": "m"})},
		{"amazon-bedrock/claude", nil, with(map[string]string{"AWS_SECRET_ACCESS_KEY": "aws"})},
		{"no-provider", nil, common},
	}
	for _, c := range cases {
		got := AgentEnv(hostEnv, c.model, c.extra...)
		assert.Equal(t, c.want, got, "AgentEnv(%q, %q)", c.model, c.extra)
		assert.NotContains(t, got, "GH_TOKEN")
		assert.NotContains(t, got, "HOME")
	}
}

func TestProviderPrefixes(t *testing.T) {
	assert.Equal(t, []string{"ANTHROPIC_"}, ProviderPrefixes("anthropic/claude"))
	assert.Equal(t, []string{"OPENROUTER_"}, ProviderPrefixes("OpenRouter/x"))
	assert.Equal(t, []string{"FIREWORKS_AI_"}, ProviderPrefixes("fireworks-ai/x"))
	assert.Contains(t, ProviderPrefixes("google/gemini"), "GEMINI_")
	assert.Nil(t, ProviderPrefixes("gpt-5"))
}
