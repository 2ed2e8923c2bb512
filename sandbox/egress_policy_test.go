package sandbox

import (
	"io"
	"net/http"
	"net/netip"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseAllowRule(t *testing.T) {
	good := map[string]AllowRule{
		"api.openai.com":          {Host: "api.openai.com"},
		"*.openai.com:443,8443":   {Host: "*.openai.com", Ports: []int{443, 8443}},
		"127.0.0.1:9222":          {Host: "127.0.0.1", Ports: []int{9222}},
		"[::1]:8080":              {Host: "::1", Ports: []int{8080}},
		"Models.Example.COM.:443": {Host: "Models.Example.COM.", Ports: []int{443}},
	}
	for in, want := range good {
		got, err := ParseAllowRule(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for _, in := range []string{"", "*.", "a.*.com", "**.com", "host:0", "host:99999", "host:x", "[::1", "user@host", "a/b"} {
		_, err := ParseAllowRule(in)
		assert.Error(t, err, "ParseAllowRule(%q)", in)
	}
	assert.Equal(t, "[::1]:8080", AllowRule{Host: "::1", Ports: []int{8080}}.String())
	assert.Equal(t, "a.test:443", AllowRule{Host: "a.test"}.String())
}

func TestAllowRuleMatching(t *testing.T) {
	p := &policy{rules: []AllowRule{
		{Host: "api.example.com"},
		{Host: "*.cdn.example.com", Ports: []int{443, 8443}},
		{Host: "127.0.0.1", Ports: []int{9222}},
	}}
	allowed := [][2]any{
		{"api.example.com", 443}, {"API.Example.com.", 443}, {"a.cdn.example.com", 8443}, {"a.b.cdn.example.com", 443}, {"127.0.0.1", 9222},
	}
	for _, c := range allowed {
		assert.NoError(t, p.check(c[0].(string), c[1].(int)), "%v", c)
	}
	denied := map[[2]any]string{
		{"api.example.com", 80}:          "port 80 is not allowed",
		{"cdn.example.com", 443}:         "not on the allowlist",
		{"evilcdn.example.com", 443}:     "not on the allowlist",
		{"api.example.com.evil.io", 443}: "not on the allowlist",
		{"127.0.0.1", 9223}:              "port 9223",
		{"127.0.0.2", 9222}:              "IP literals",
		{"::ffff:127.0.0.1", 80}:         "port 80",
		{"8.8.8.8", 443}:                 "IP literals",
	}
	for c, want := range denied {
		err := p.check(c[0].(string), c[1].(int))
		var d *DeniedError
		require.ErrorAs(t, err, &d, "%v", c)
		assert.Contains(t, d.Reason, want, "%v", c)
	}
}

func TestNonPublic(t *testing.T) {
	want := map[string]string{
		"127.0.0.1":        "loopback",
		"::1":              "loopback",
		"::ffff:127.0.0.1": "loopback",
		"10.0.0.1":         "private",
		"172.16.5.4":       "private",
		"192.168.0.1":      "private",
		"fc00::1":          "private",
		"169.254.169.254":  "cloud metadata",
		"fd00:ec2::254":    "cloud metadata",
		"169.254.1.1":      "link-local",
		"fe80::1":          "link-local",
		"0.0.0.0":          "unspecified",
		"0.1.2.3":          "this-network",
		"::":               "unspecified",
		"100.64.0.1":       "shared (CGNAT)",
		"239.1.1.1":        "multicast",
		"224.0.0.1":        "link-local",
		"255.255.255.255":  "broadcast",
		"64:ff9b::a00:1":   "NAT64",
		"2002:a00:1::":     "6to4",
		"8.8.8.8":          "",
		"2606:4700::1111":  "",
	}
	for a, w := range want {
		assert.Equal(t, w, nonPublic(netip.MustParseAddr(a)), a)
	}
}

func TestHeldBackAndScrub(t *testing.T) {
	sc := newScrubber([]placeholder{{Secret: Secret{Value: "sk-secret-value"}, token: "PH"}})
	assert.Equal(t, 3, sc.heldBack("data: sk-"))
	assert.Equal(t, 0, sc.heldBack("data\n\n"))
	assert.Equal(t, 0, sc.heldBack("sk-secret-value"), "a whole secret is replaced, not held")
	assert.Equal(t, "a PH b "+Redacted+" c", sc.string("a sk-secret-value b c2stc2VjcmV0LXZhbHVl c"), "the value and its base64")
	h := http.Header{"X-A": {"sk-secret-value"}, "X-Sk-Secret-Value": {"1"}, "X-" + "c2stc2VjcmV0LXZhbHVl": {"2"}}
	sc.header(h)
	assert.Equal(t, http.Header{"X-A": {"PH"}}, h, "a header whose name holds the secret, in any form or case, goes")

	// A stream split anywhere comes out scrubbed, and nothing whole waits.
	for split := 1; split < 20; split++ {
		src := "event: sk-secret-value done"
		r := sc.reader(io.NopCloser(&slowReader{s: src, n: split}), nil)
		b, err := io.ReadAll(r)
		require.NoError(t, err)
		assert.Equal(t, "event: PH done", string(b), "split %d", split)
	}
}

// slowReader returns s n bytes at a time.
type slowReader struct {
	s string
	n int
}

func (r *slowReader) Read(p []byte) (int, error) {
	if r.s == "" {
		return 0, io.EOF
	}
	n := copy(p, r.s[:min(r.n, len(r.s))])
	r.s = r.s[n:]
	return n, nil
}

func TestParseSecret(t *testing.T) {
	env := map[string]string{"HOST_KEY": "real", "OPENAI_API_KEY": "sk-1"}
	getenv := func(k string) string { return env[k] }
	got, err := ParseSecret("MODEL_KEY=HOST_KEY@api.example.com,*.example.org", getenv)
	require.NoError(t, err)
	assert.Equal(t, Secret{Name: "MODEL_KEY", Value: "real", Hosts: []string{"api.example.com", "*.example.org"}}, got)
	got, err = ParseSecret("OPENAI_API_KEY@api.openai.com", getenv)
	require.NoError(t, err)
	assert.Equal(t, Secret{Name: "OPENAI_API_KEY", Value: "sk-1", Hosts: []string{"api.openai.com"}}, got)
	for _, bad := range []string{"K=HOST_KEY", "K=HOST_KEY@", "K=MISSING@a.com", "1K=HOST_KEY@a.com", "K=HOST_KEY@a.*.com"} {
		_, err := ParseSecret(bad, getenv)
		assert.Error(t, err, "ParseSecret(%q)", bad)
	}
}

// TestScrubWrappedBase64AsAStream: base64 of the key wrapped across
// lines, read a few bytes at a time, never comes out whole; a line of
// text ending in a break is not held for want of the next.
func TestScrubWrappedBase64AsAStream(t *testing.T) {
	sc := newScrubber([]placeholder{{Secret: Secret{Value: slashedKey}, token: "PH"}})
	for _, width := range []int{4, 16, 64, 76} {
		for pad := range 6 {
			src := wrappedBase64Blocks(strings.Repeat("y", pad)+slashedKey, width, "\r\n")
			for _, split := range []int{1, 3, 7, 32 * 1024} {
				r := sc.reader(io.NopCloser(&slowReader{s: src, n: split}), nil)
				b, err := io.ReadAll(r)
				require.NoError(t, err)
				assert.NotContains(t, decodeBase64Blocks(string(b)), slashedKey, "width %d, pad %d, split %d", width, pad, split)
			}
		}
	}
	assert.Equal(t, 0, sc.heldBack("data: {}\n\n"))
	assert.Equal(t, "a\nb\r\n"+Redacted+"\n", sc.string("a\nb\r\nQUJTS1FtVmtj\r\nbTlqYXcrL1ptOXZZ\nbUZ5L1ltRjYrY1hWND09\n"))
}
