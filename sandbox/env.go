package sandbox

import (
	"slices"
	"strings"
)

// providerPrefixes maps a model provider (the part of a model name before
// the slash, e.g. "anthropic" in "anthropic/claude-haiku") to the prefixes
// of the variables its client reads, for providers whose variables are not
// simply named after them.
var providerPrefixes = map[string][]string{
	"google":         {"GEMINI_", "GOOGLE_API_KEY", "GOOGLE_GENAI_"},
	"google-vertex":  {"GOOGLE_CLOUD_", "GOOGLE_APPLICATION_CREDENTIALS", "GOOGLE_GENAI_"},
	"amazon-bedrock": {"AWS_"},
	"azure-openai":   {"AZURE_OPENAI_"},
	"openai-codex":   {"OPENAI_"},
	"github-copilot": {"COPILOT_"},
	"vercel":         {"AI_GATEWAY_"},
}

// proxyVars and caVars are passed through when set: HTTP clients read them.
var (
	proxyVars = []string{"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "all_proxy", "no_proxy"}
	caVars    = []string{"NODE_EXTRA_CA_CERTS", "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE"}
)

// ProviderPrefixes returns the prefixes of the environment variables the
// provider of model reads: "anthropic/claude-x" gives ANTHROPIC_,
// "google/gemini-x" gives GEMINI_ (and GOOGLE_API_KEY), a provider not in
// the mapping its upper-cased name with '-' as '_' and a trailing '_'.
// A model without a provider gives none.
func ProviderPrefixes(model string) []string {
	provider, _, ok := strings.Cut(model, "/")
	if !ok || provider == "" {
		return nil
	}
	provider = strings.ToLower(provider)
	if p, ok := providerPrefixes[provider]; ok {
		return p
	}
	return []string{strings.ToUpper(strings.ReplaceAll(provider, "-", "_")) + "_"}
}

// AgentEnv selects from host (a process environment, "NAME=value" entries
// as os.Environ returns them) the variables an agent for model may get:
// its provider's (ProviderPrefixes), the proxy and CA bundle variables,
// and the ones named in extra. Everything else is dropped; a later entry
// for a name wins, as in a process environment. The result is meant for
// Policy.Env; an Egress's own proxy, CA and placeholder variables override
// it there.
func AgentEnv(host []string, model string, extra ...string) map[string]string {
	prefixes := ProviderPrefixes(model)
	allowed := func(name string) bool {
		for _, p := range prefixes {
			// A prefix ending in '_' matches the family; any other is an exact name.
			if strings.HasSuffix(p, "_") && strings.HasPrefix(name, p) || name == p {
				return true
			}
		}
		return slices.Contains(proxyVars, name) || slices.Contains(caVars, name) || slices.Contains(extra, name)
	}
	env := map[string]string{}
	for _, kv := range host {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || !envName.MatchString(name) || !allowed(name) {
			continue
		}
		env[name] = value
	}
	return env
}
