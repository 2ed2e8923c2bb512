package sandbox

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// providerHostEnv is a host environment holding every provider's secrets
// under the names their clients read, and credentials hidden in URLs,
// headers and proxy settings, each a fresh canary; and some harmless
// settings. It returns the environment and the canaries by variable.
func providerHostEnv(t *testing.T) ([]string, map[string]string) {
	secrets := map[string]string{}
	env := []string{"HOME=/root", "PATH=/usr/bin", "AWS_REGION=eu-west-1", "GOOGLE_CLOUD_PROJECT=my-project",
		"ANTHROPIC_MODEL=claude-x", "OPENAI_ORG_ID=org-public"}
	put := func(name, format string) {
		c := newMarker(t, strings.ToLower(name))
		secrets[name] = c
		env = append(env, name+"="+fmt.Sprintf(format, c))
	}
	for _, name := range []string{
		"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN", "OPENAI_API_KEY", "OPENAI_ADMIN_KEY",
		"GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GENAI_API_KEY", "GOOGLE_CLOUD_ACCESS_TOKEN",
		"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_BEARER_TOKEN_BEDROCK",
		"AZURE_OPENAI_API_KEY", "AZURE_OPENAI_AD_TOKEN", "OPENROUTER_API_KEY", "MISTRAL_API_KEY", "GROQ_API_KEY",
		"XAI_API_KEY", "DEEPSEEK_API_KEY", "COPILOT_GITHUB_TOKEN", "AI_GATEWAY_API_KEY", "FIREWORKS_AI_API_KEY",
	} {
		put(name, "%s")
	}
	put("GOOGLE_APPLICATION_CREDENTIALS", "/secrets/%s.json")
	put("ANTHROPIC_BASE_URL", "https://user:%s@llm-proxy.corp/v1")
	put("OPENAI_BASE_URL", "https://gateway.corp/v1?api-key=%s")
	put("AZURE_OPENAI_ENDPOINT", "https://%s@x.openai.azure.com/")
	put("ANTHROPIC_CUSTOM_HEADERS", "x-api-key: sk-ant-%s")
	put("OPENROUTER_EXTRA", "Bearer %s")
	put("MISTRAL_SERVER", "sk-%s")
	put("HTTP_PROXY", "http://u:%s@proxy:3128")
	put("ALL_PROXY", "socks5://u:%s@proxy:1080")
	put("all_proxy", "socks5h://u:%s@proxy:1080")
	return env, secrets
}

// TestEscapeProviderKeys: whichever provider the model is, the agent's
// environment as the runner builds it (AgentEnv, then the egress's
// variables for the model's key) holds no secret value: the model's key is
// a placeholder and every other secret-bearing variable, however it is
// spelled or where the secret hides in it, stays out.
func TestEscapeProviderKeys(t *testing.T) {
	needBwrap(t)
	eachLauncher(t, func(t *testing.T) {
		host, secrets := providerHostEnv(t)
		models := map[string]string{ // model -> the key variable the runner swaps
			"anthropic/claude": "ANTHROPIC_API_KEY", "openai/gpt": "OPENAI_API_KEY", "google/gemini": "GEMINI_API_KEY",
			"google-vertex/gemini": "", "amazon-bedrock/claude": "", "azure-openai/gpt": "AZURE_OPENAI_API_KEY",
			"openrouter/x": "OPENROUTER_API_KEY", "mistral/large": "MISTRAL_API_KEY", "xai/grok": "XAI_API_KEY",
			"github-copilot/x": "", "vercel/x": "", "fireworks-ai/x": "FIREWORKS_AI_API_KEY",
		}
		for model, keyVar := range models {
			t.Run(model, func(t *testing.T) {
				var cfg EgressConfig
				cfg.Allow = []AllowRule{{Host: "model.test"}}
				if keyVar != "" {
					cfg.Secrets = []Secret{{Name: keyVar, Value: secrets[keyVar], Hosts: []string{"model.test"}}}
				}
				e := startEgress(t, cfg)
				sb := openSandbox(t, Policy{Egress: e, Env: AgentEnv(host, model)})
				r := runSh(t, sb, `tr '\0' '\n' < /proc/self/environ; echo ---; env`)
				require.Equal(t, 0, r.code, r.out)
				for name, v := range secrets {
					assert.NotContains(t, r.out, v, "%s reached the agent", name)
				}
				if keyVar != "" {
					ph, _ := e.Placeholder(keyVar)
					assert.Contains(t, r.out, keyVar+"="+ph, "the key is a placeholder")
				}
				assert.Contains(t, r.out, "HTTPS_PROXY=http://127.0.0.1:3128", "the egress's own proxy")
			})
		}
	})
}
