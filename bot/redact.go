package bot

import (
	"regexp"
	"strings"

	"github.com/pairbench/pairbench/internal/secrets"
)

// Redaction: what the bot posts and logs may quote errors from git, the
// runner and the store, and those may quote URLs with credentials, tokens
// and the server's own paths. None of it may reach a comment or a log.
var (
	urlUserinfo = regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.-]*://)[^/\s@'"]+@`)
	secretParam = regexp.MustCompile(`(?i)\b((?:access_)?token|password|secret|api[_-]?key|X-Amz-(?:Credential|Signature|Security-Token))=[^&\s'"]+`)
	fileURL     = regexp.MustCompile(`file://\S*`)
	absPath     = regexp.MustCompile(`(^|[\s'"(=:])(/[^/\s'"():,][^\s'"():,]*)`)
)

// RedactSecrets removes credentials from s, as Redact does, but keeps
// paths: for the operator's own logs, and for every string the bot posts
// (see postedTransport). Credentials are URL user information, tokens of
// the shapes internal/secrets knows, and secret query parameters.
func RedactSecrets(s string) string {
	s = urlUserinfo.ReplaceAllString(s, "${1}***@")
	s = secrets.Redact(s)
	return secretParam.ReplaceAllString(s, "${1}=***")
}

// Redact removes credentials and server paths from s: URL user info,
// GitHub, AWS and model provider tokens, secret query parameters (such as a
// presigned URL's signature), file:// URLs, and absolute paths, of which it
// keeps the last two elements.
func Redact(s string) string {
	s = RedactSecrets(s)
	s = fileURL.ReplaceAllString(s, "(a file on the server)")
	s = absPath.ReplaceAllStringFunc(s, func(m string) string {
		i := strings.Index(m, "/")
		lead, p := m[:i], strings.TrimRight(m[i:], ".")
		parts := strings.Split(strings.Trim(p, "/"), "/")
		if len(parts) <= 2 {
			return lead + "…/" + parts[len(parts)-1] + m[i+len(p):]
		}
		return lead + "…/" + strings.Join(parts[len(parts)-2:], "/") + m[i+len(p):]
	})
	return s
}

func redact(s string) string { return Redact(s) }
