// Package secrets knows the shapes of well-known credentials: the sandbox
// keeps a variable shaped like one out of an agent's environment, and the
// GitHub bot removes one from everything it posts.
package secrets

import (
	"regexp"
	"strings"
	"sync"
)

// KeyShapes returns the prefixes of well-known credential formats, matched at
// the start of a word: model providers' keys (OpenAI and Anthropic sk-,
// Google AIza, Groq, xAI, Replicate, Perplexity), Google OAuth access and
// refresh tokens (ya29., 1//0), AWS access key ids (AKIA or ASIA and 16
// upper-case letters or digits), GitHub's tokens, GitLab's (personal, OAuth
// application, deploy, runner, CI job, pipeline trigger, feed, incoming
// mail, agent, SCIM), Slack's (bot, user, app, refresh, configuration),
// Hugging Face's, npm's, PyPI's, Stripe's (sk_/rk_ keys, webhook secrets),
// DigitalOcean's, Shopify's, SendGrid's, Vault's (service, batch, recovery),
// Databricks' and age's secret keys, a PEM private key, an Azure connection
// string's key, webhook URLs whose path is the secret (Slack, Discord,
// Microsoft Teams), Telegram bot tokens and their API URLs, JWTs and HTTP
// authorization schemes. A format with a common word as prefix (npm_, dapi,
// SG.) is matched only with the length and alphabet of its tokens, so
// npm_config_cache or a pypi-mirror host does not count.
var KeyShapes = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(^|[^A-Za-z0-9])(` +
		`sk-|sk_|rk_|whsec_|AIza|ya29\.|1//0[A-Za-z0-9_-]{20}|(AKIA|ASIA)[A-Z0-9]{16}|` +
		`ghp_|gho_|ghu_|ghs_|ghr_|github_pat_|` +
		`gl(pat|oas|dt|rt|rtr|cbt|ptt|ft|imt|agent|soat)-|` +
		`xox[abeprs]-|xoxe\.|xapp-|hf_|gsk_|xai-|r8_|pplx-|` +
		`npm_[A-Za-z0-9]{36}|pypi-AgE|do[por]_v1_[a-f0-9]{16}|shp(at|ca|pa|ss)_[a-fA-F0-9]{16}|` +
		`SG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16}|hv[sbr]\.[A-Za-z0-9_-]{20}|dapi[a-f0-9]{32}|` +
		`AGE-SECRET-KEY-1|-----BEGIN ([A-Z0-9]+ )*PRIVATE KEY|AccountKey=|SharedAccessKey=|SharedAccessSignature=|` +
		`hooks\.slack\.com/(services|workflows|triggers)/|discord(app)?\.com/api/webhooks/|webhook\.office\.com/webhookb2/|` +
		`api\.telegram\.org/bot|[0-9]{8,10}:AA[A-Za-z0-9_-]{33}|` +
		`eyJ[A-Za-z0-9_-]{8}|Bearer |Basic )`)
})

// pemKey is a PEM private key block, to its end or the end of the text.
var pemKey = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`-----BEGIN ([A-Z0-9]+ )*PRIVATE KEY-----[\s\S]*?(-----END ([A-Z0-9]+ )*PRIVATE KEY-----|\z)`)
})

// tokenChar is a character a token, or a URL that is one, goes on with.
func tokenChar(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("_-.~+/=", c) >= 0
}

// Redact replaces every credential in s shaped as KeyShapes knows (with the
// token characters that follow its prefix) and every PEM private key with
// "***". A bare prefix followed by fewer than 8 token characters is a word,
// not a token ("sk-learn"), and an authorization scheme counts only with a
// token holding a digit or one of + / = _ after it ("Basic auth" stays).
func Redact(s string) string {
	s = pemKey().ReplaceAllString(s, "***")
	var b strings.Builder
	last := 0
	for _, m := range KeyShapes().FindAllStringSubmatchIndex(s, -1) {
		start, end := m[4], m[5]
		if start < last {
			continue
		}
		stop := end
		for stop < len(s) && tokenChar(s[stop]) {
			stop++
		}
		shape, rest := s[start:end], s[end:stop]
		switch {
		case strings.HasSuffix(shape, " ") && (len(rest) < 8 || !strings.ContainsAny(rest, "0123456789+/=_")):
			continue
		case len(shape) < 12 && len(rest) < 8:
			continue
		}
		b.WriteString(s[last:start])
		b.WriteString("***")
		last = stop
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}
