package sandbox

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// slashedKey is a key with '/', '+' and '=' in it, as base64 keys have
// (Amazon Bedrock's API keys, for one): the characters encoders escape
// in more than one way.
const slashedKey = "ABSKQmVkcm9jaw+/Zm9vYmFy/YmF6+cXV4=="

// lowerPercent returns s with the hex digits of its %XX escapes in lower
// case, as some encoders write them.
func lowerPercent(s string) string {
	return regexp.MustCompile(`%[0-9A-F]{2}`).ReplaceAllStringFunc(s, strings.ToLower)
}

// TestEscapeProxyKeyInOtherEscapes: the agent has the model's host store
// the key (its placeholder, swapped by the proxy) and hand it back in the
// escapes other encoders than Go's write: JSON with '/' as "\/" (PHP's
// json_encode, and others), '+' as "\u002B" (.NET's System.Text.Json),
// '=' as "\u003d" (Gson), percent-encoding with lower-case hex digits
// in a redirect's query and path. On 4914be4 each reached the sandbox,
// one unescape away from the key; the two \u forms still did on ba27753.
func TestEscapeProxyKeyInOtherEscapes(t *testing.T) {
	requireBwrapNet(t)
	eachLauncher(t, func(t *testing.T) {
		upCA, roots := newTestAuthority(t)
		var mu sync.Mutex
		var stored string
		model := newTestUpstream(t, upCA, func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			defer mu.Unlock()
			switch r.URL.Path {
			case "/store":
				stored = strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
				fmt.Fprint(w, "stored")
			case "/php-json":
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprintf(w, `{"error":"invalid key %s"}`, strings.ReplaceAll(stored, "/", `\/`))
			case "/dotnet-json": // System.Text.Json's default escapes
				fmt.Fprintf(w, `{"error":"invalid key %s"}`, strings.ReplaceAll(stored, "+", `\u002B`))
			case "/gson-json": // Gson's default escapes
				fmt.Fprintf(w, `{"error":"invalid key %s"}`, strings.ReplaceAll(stored, "=", `\u003d`))
			case "/lower-percent":
				w.Header().Set("Location", "https://elsewhere.test/"+lowerPercent(url.PathEscape(stored))+"?k="+lowerPercent(url.QueryEscape(stored)))
				w.WriteHeader(http.StatusFound)
				fmt.Fprintf(w, "k=%s", lowerPercent(url.QueryEscape(stored)))
			}
		})
		e := startEgress(t, EgressConfig{
			Allow:              []AllowRule{{Host: "model.test", Ports: []int{model.port}}},
			Secrets:            []Secret{{Name: "MODEL_API_KEY", Value: slashedKey, Hosts: []string{"model.test"}}},
			AllowLoopbackHosts: []string{"model.test"},
			Resolver:           mapResolver{"model.test": loopback4},
			UpstreamRoots:      roots,
		})
		sb := newNetSandbox(t, e, nil, "")
		m := "https://model.test:" + strconv.Itoa(model.port)
		r := sb.run(t, `curl -sS -H "Authorization: Bearer $MODEL_API_KEY" `+m+`/store`)
		require.Equal(t, "stored", r.stdout, "control: the key is stored upstream: %s", r)
		mu.Lock()
		require.Equal(t, slashedKey, stored)
		mu.Unlock()

		forms := map[string]string{
			"JSON with \\/":           strings.ReplaceAll(slashedKey, "/", `\/`),
			"JSON with \\u002B":       strings.ReplaceAll(slashedKey, "+", `\u002B`),
			"JSON with \\u003d":       strings.ReplaceAll(slashedKey, "=", `\u003d`),
			"lower-case query escape": lowerPercent(url.QueryEscape(slashedKey)),
			"lower-case path escape":  lowerPercent(url.PathEscape(slashedKey)),
		}
		r = sb.run(t, `for p in php-json dotnet-json gson-json lower-percent; do curl -sS -i `+m+`/$p; echo; done`)
		require.Equal(t, 0, r.code, r)
		require.Contains(t, r.stdout, "invalid key", "control: the upstream answered")
		for name, f := range forms {
			assert.NotContains(t, r.stdout, f, "the key reached the sandbox as %s", name)
		}
		assert.NotContains(t, r.stdout, slashedKey)
	})
}
