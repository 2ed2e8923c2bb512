package sandbox

import (
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/pairbench/pairbench/internal/secrets"
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

// proxyVars and caVars are the host's HTTP client settings. They never pass:
// inside, the egress proxy is the only way out and sets its own, and the
// host's may hold credentials (a proxy URL's user:password) or name host
// files the sandbox does not have.
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
// as os.Environ returns them) the variables an agent for model may get: its
// provider's (ProviderPrefixes) and the ones named in extra, but never one
// that bears a secret (SecretBearing) or the host's proxy and CA settings.
// A secret reaches an agent only as a placeholder: give it to the egress
// proxy as a Secret. A later entry for a name wins, as in a process
// environment. The result is meant for Policy.Env; an Egress's own proxy,
// CA and placeholder variables override it there.
func AgentEnv(host []string, model string, extra ...string) map[string]string {
	prefixes := ProviderPrefixes(model)
	allowed := func(name string) bool {
		if slices.Contains(proxyVars, name) || slices.Contains(caVars, name) {
			return false
		}
		for _, p := range prefixes {
			// A prefix ending in '_' matches the family; any other is an exact name.
			if strings.HasSuffix(p, "_") && strings.HasPrefix(name, p) || name == p {
				return true
			}
		}
		return slices.Contains(extra, name)
	}
	env := map[string]string{}
	for _, kv := range host {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || !envName().MatchString(name) || !allowed(name) {
			continue
		}
		if SecretBearing(name, value) {
			delete(env, name) // an earlier, harmless value of the name goes too
			continue
		}
		env[name] = value
	}
	return env
}

// secretNameParts mark a variable whose value is, or holds, a secret.
var secretNameParts = []string{
	"KEY", "TOKEN", "SECRET", "PASS", "CREDENTIAL", "AUTH", "COOKIE", "SESSION", "PRIVATE", "SIGNATURE",
	"PROXY", "HEADER", "_PWD",
}

// secretQuery are URL query parameters that carry a credential.
var secretQuery = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)^(.*[-_])?(key|apikey|token|secret|sig|signature|password|passwd|pass|auth|code|credential|session)$`)
})

// secretPhrases are the ways a credential is written out in a value,
// whatever its format, in any case: an HTTP authorization scheme (bearer,
// with a token of at least 8 characters after it), a header line of a
// header that carries one (Authorization, X-Api-Key, Api-Key,
// X-Goog-Api-Key, Private-Token, X-Auth-Token, Cookie), or a password in a
// connection string (Password=, Passwd=, Pwd=).
var secretPhrases = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)(^|[^a-z0-9])(` +
		`bearer [a-z0-9._~+/=-]{8}|` +
		`(authorization|proxy-authorization|x-api-key|api-key|x-goog-api-key|private-token|x-auth-token|cookie)[ \t]*:|` +
		`(password|passwd|pwd)[ \t]*=)`)
})

// SecretBearing reports whether a variable bears a secret, by its name
// (KEY, TOKEN, SECRET, PASS, CREDENTIAL, AUTH, COOKIE, SESSION, PRIVATE,
// SIGNATURE, PROXY, HEADER, _PWD in any case) or its value: a URL with user
// information or a credential in its query or fragment, a string shaped like a
// well-known key or authorization header, or a credential written out as a
// header line or a connection string's password. It is deliberately wide: a
// setting it takes for a secret only stays out of the sandbox.
func SecretBearing(name, value string) bool {
	upper := strings.ToUpper(name)
	for _, part := range secretNameParts {
		if strings.Contains(upper, part) {
			return true
		}
	}
	if secrets.KeyShapes().MatchString(value) || secretPhrases().MatchString(value) {
		return true
	}
	for _, word := range strings.FieldsFunc(value, func(r rune) bool { return r == ' ' || r == ',' || r == ';' || r == '\t' }) {
		if !strings.Contains(word, "://") {
			continue
		}
		u, err := url.Parse(word)
		if err != nil {
			return true // a URL too odd to read may hide anything
		}
		if u.User != nil {
			return true
		}
		// The fragment too: an OAuth implicit grant returns its token there.
		fragment, _ := url.ParseQuery(u.Fragment)
		for _, q := range []url.Values{u.Query(), fragment} {
			for k := range q {
				if secretQuery().MatchString(k) {
					return true
				}
			}
		}
	}
	return false
}
