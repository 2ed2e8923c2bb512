package secrets_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/pairbench/pairbench/internal/secrets"
)

func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"token ghp_0123456789abcdefghijABCDEFGHIJ leaked":                                      "token *** leaked",
		"clone with glpat-Zx9Yw8Vu7Ts6Rq5Po4Nm failed":                                         "clone with *** failed",
		"hook https://hooks.slack.com/services/T000/B000/XXXX ok":                              "hook https://*** ok",
		"AKIAABCDEFGHIJKLMNOP is the key":                                                      "*** is the key",
		"Authorization: Bearer abc.def-123456 sent":                                            "Authorization: *** sent",
		"key:\n-----BEGIN RSA PRIVATE KEY-----\nMIIE\nabc\n-----END RSA PRIVATE KEY-----\nend": "key:\n***\nend",
		// Words that start like a token are left alone.
		"uses sk-learn and Basic authentication, a Bearer token": "uses sk-learn and Basic authentication, a Bearer token",
		"risk-averse task_manager ghp_ prefix":                   "risk-averse task_manager ghp_ prefix",
		"domains/books.example/tools/find.js:3: bad":             "domains/books.example/tools/find.js:3: bad",
	} {
		assert.Equal(t, want, secrets.Redact(in), in)
	}
}

// TestRedactRemovesWhatKeyShapesFinds: every text KeyShapes takes for a
// credential loses it to Redact.
func TestRedactRemovesWhatKeyShapesFinds(t *testing.T) {
	for _, tok := range []string{
		"sk-proj-abcdefghijklmnop0123", "xoxb-123456789012-abcdef", "hf_AbCdEfGhIjKlMnOpQrSt01", "ya29.a0AfH6SMBx1234567",
		"npm_abcdefghijklmnopqrstuvwxyz0123456789", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig", "dapi0123456789abcdef0123456789abcdef",
	} {
		assert.True(t, secrets.KeyShapes().MatchString(tok), tok)
		assert.Equal(t, "x *** y", secrets.Redact("x "+tok+" y"), tok)
	}
}
