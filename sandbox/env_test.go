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
	"MISTRAL_REGION=eu", "AWS_REGION=us-east-1", "MISTRAL_REGION=sk-hidden-in-a-setting",
	"MISTRAL_REGION=eu",
}

func TestAgentEnv(t *testing.T) {
	cases := []struct {
		model string
		extra []string
		want  map[string]string
	}{
		{"anthropic/claude-haiku", nil, map[string]string{"ANTHROPIC_BASE_URL": "http://127.0.0.1:9/v1"}},
		{"google/gemini-3-flash", nil, map[string]string{}},
		{"openai/gpt-5", []string{"KERNEL_API_KEY", "PATH"}, map[string]string{"PATH": "/usr/bin"}},
		{"mistral/large", nil, map[string]string{"MISTRAL_REGION": "eu"}},
		{"amazon-bedrock/claude", nil, map[string]string{"AWS_REGION": "us-east-1"}},
		{"no-provider", []string{"HTTPS_PROXY", "NODE_EXTRA_CA_CERTS"}, map[string]string{}},
	}
	for _, c := range cases {
		got := AgentEnv(hostEnv, c.model, c.extra...)
		assert.Equal(t, c.want, got, "AgentEnv(%q, %q)", c.model, c.extra)
	}
}

func TestSecretBearing(t *testing.T) {
	for _, kv := range [][2]string{
		{"OPENAI_API_KEY", "x"}, {"anthropic_auth_token", "x"}, {"AWS_SESSION_TOKEN", "x"}, {"GOOGLE_APPLICATION_CREDENTIALS", "/k.json"},
		{"DB_PASS", "x"}, {"ALL_PROXY", "socks5://proxy:1080"}, {"ANTHROPIC_CUSTOM_HEADERS", "x-y: z"},
		{"ANTHROPIC_BASE_URL", "https://u:p@proxy/v1"}, {"AZURE_OPENAI_ENDPOINT", "https://tok@x.openai.azure.com"},
		{"OPENAI_BASE_URL", "https://gw/v1?api-key=abc"}, {"X_URL", "https://gw/v1?x_token=abc&a=b"}, {"X_URL", "https://gw/v1?sig=abc"},
		{"X", "sk-ant-api03-abcdef"}, {"X", "prefix sk-proj-abc"}, {"X", "AIzaSyA-1234"}, {"X", "AKIAIOSFODNN7EXAMPLE"},
		{"X", "ghp_abcdef"}, {"X", "github_pat_11AB"}, {"X", "glpat-abc"}, {"X", "xoxb-1-2"}, {"X", "hf_abc"},
		{"X", "eyJhbGciOiJIUzI1NiJ9.e30.x"}, {"X", "Bearer abc"}, {"X", "Basic dXNlcjpwYXNz"},
		{"X", "ya29.a0AfH6SM"}, {"X", "npm_0123456789abcdefghijABCDEFGHIJ012345"}, {"X", "pypi-AgEIcHlwaS5vcmc"},
	} {
		assert.True(t, SecretBearing(kv[0], kv[1]), "%s=%s", kv[0], kv[1])
	}
	for _, kv := range [][2]string{
		{"AWS_REGION", "us-east-1"}, {"ANTHROPIC_BASE_URL", "https://api.anthropic.com"}, {"OPENAI_BASE_URL", "http://127.0.0.1:9/v1?model=x"},
		{"GOOGLE_CLOUD_PROJECT", "my-project"}, {"X", "task-runner"}, {"X", "disk-1"}, {"X", "risk-free"}, {"LANG", "C.UTF-8"},
		{"X", "npm_config_cache"}, {"X", "https://pypi-mirror.corp/simple"}, {"X", "ASIA-PACIFIC"},
	} {
		assert.False(t, SecretBearing(kv[0], kv[1]), "%s=%s", kv[0], kv[1])
	}
}

func TestProviderPrefixes(t *testing.T) {
	assert.Equal(t, []string{"ANTHROPIC_"}, ProviderPrefixes("anthropic/claude"))
	assert.Equal(t, []string{"OPENROUTER_"}, ProviderPrefixes("OpenRouter/x"))
	assert.Equal(t, []string{"FIREWORKS_AI_"}, ProviderPrefixes("fireworks-ai/x"))
	assert.Contains(t, ProviderPrefixes("google/gemini"), "GEMINI_")
	assert.Nil(t, ProviderPrefixes("gpt-5"))
}
