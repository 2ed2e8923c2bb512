package sandbox

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"math/rand/v2"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const testSecret = `sk-ant-api03_Ab+c/d=e"f\g&h?i j` // every escaping rule has work to do

func TestRedactorRemovesEveryForm(t *testing.T) {
	r := NewRedactor(testSecret)
	jsonForm, err := json.Marshal(testSecret)
	require.NoError(t, err)
	forms := map[string]string{
		"raw":            testSecret,
		"base64":         base64.StdEncoding.EncodeToString([]byte(testSecret)),
		"base64url":      base64.URLEncoding.EncodeToString([]byte(testSecret)),
		"base64 raw":     base64.RawStdEncoding.EncodeToString([]byte(testSecret)),
		"query escaped":  url.QueryEscape(testSecret),
		"path escaped":   url.PathEscape(testSecret),
		"json escaped":   string(jsonForm[1 : len(jsonForm)-1]),
		"basic auth":     "Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte("user:"+testSecret)),
		"basic auth (2)": base64.StdEncoding.EncodeToString([]byte("us:" + testSecret + ":tail")),
		"basic auth (3)": base64.URLEncoding.EncodeToString([]byte("u:" + testSecret)),
	}
	for name, form := range forms {
		text := "before " + form + " after"
		got := r.String(text)
		assert.NotContains(t, got, form, name)
		assert.Contains(t, got, Redacted, name)
		if !strings.HasPrefix(name, "basic") {
			assert.Equal(t, "before "+Redacted+" after", got, name)
		}
		// The base64 form of a secret at any offset leaves no long run of
		// its characters behind.
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
			full := enc.EncodeToString([]byte(testSecret))
			assert.NotContains(t, got, full[4:len(full)-4], name)
		}
	}
}

func TestRedactorLeavesOtherTextAlone(t *testing.T) {
	r := NewRedactor(testSecret, "another-secret-value")
	text := `{"role":"assistant","content":"the key is sk-ant-api03 but not the rest"}`
	assert.Equal(t, text, r.String(text))
	assert.Equal(t, text, NewRedactor().String(text))
	var nilR *Redactor
	assert.Equal(t, text, nilR.String(text))
}

func TestRedactWriterSecretSplitAcrossWrites(t *testing.T) {
	secrets := []string{testSecret, "ghp_0123456789abcdefABCDEF"}
	r := NewRedactor(secrets...)
	text := "a " + testSecret + " b " + base64.StdEncoding.EncodeToString([]byte(testSecret)) + " c ghp_0123456789abcdefABCDEF" + testSecret + " end"
	want := r.String(text)
	for _, s := range secrets {
		require.NotContains(t, want, s)
	}
	// Every split point, then random chunkings with one-byte writes.
	for cut := 0; cut <= len(text); cut++ {
		var out bytes.Buffer
		w := r.Writer(&out)
		_, err := w.Write([]byte(text[:cut]))
		require.NoError(t, err)
		_, err = w.Write([]byte(text[cut:]))
		require.NoError(t, err)
		require.NoError(t, w.Close())
		require.Equal(t, want, out.String(), "split at %d", cut)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		var out bytes.Buffer
		w := r.Writer(&out)
		for rest := text; rest != ""; {
			n := min(len(rest), 1+rng.IntN(12))
			w.Write([]byte(rest[:n]))
			rest = rest[n:]
		}
		require.NoError(t, w.Close())
		require.Equal(t, want, out.String())
	}
}

func TestRedactWriterPassesThroughWithoutSecrets(t *testing.T) {
	var out bytes.Buffer
	w := NewRedactor().Writer(&out)
	w.Write([]byte("hello"))
	assert.Equal(t, "hello", out.String(), "nothing held back without secrets")
}

func TestSecretValues(t *testing.T) {
	env := map[string]string{
		"ANTHROPIC_API_KEY":   "sk-ant-0123456789",
		"GH_TOKEN":            "ghp_abcdefghijkl",
		"DB_PASSWORD":         "hunter2hunter2",
		"CLIENT_SECRET":       "s3cr3t-value",
		"HTTPS_PROXY":         "http://user:pw@proxy:3128",
		"NO_PROXY":            "localhost,127.0.0.1,::1",
		"SHORT_KEY":           "abc",
		"PATH":                "/usr/bin:/bin:/usr/local/bin",
		"NODE_EXTRA_CA_CERTS": "/etc/ssl/certs/extra.pem",
		"MODEL":               "anthropic/claude-haiku",
	}
	assert.ElementsMatch(t, []string{
		"sk-ant-0123456789", "ghp_abcdefghijkl", "hunter2hunter2", "s3cr3t-value", "http://user:pw@proxy:3128",
	}, SecretValues(env))
}

func BenchmarkRedactWriter(b *testing.B) {
	secrets := []string{testSecret, "ghp_0123456789abcdefABCDEF", "AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"}
	r := NewRedactor(secrets...)
	line := []byte(strings.Repeat(`{"type":"message_update","delta":"Some ordinary streamed text, with JSON around it."}`+"\n", 50))
	b.SetBytes(int64(len(line)))
	w := r.Writer(io.Discard)
	for b.Loop() {
		w.Write(line)
	}
}
