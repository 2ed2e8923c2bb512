package agenttest

import (
	"context"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/agent/launch"
	"github.com/pairbench/pairbench/model"
	"github.com/pairbench/pairbench/rundir"
)

// standInHost is the model's host name: the TLS stand-in's certificate
// (net/http/httptest's) is for it, and the egress proxy resolves it to the
// stand-in on loopback.
const standInHost = "example.com"

// loopbackResolver resolves every name to 127.0.0.1.
type loopbackResolver struct{}

func (loopbackResolver) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
}

// hostConfig are provider settings a host may hold beside its key, which
// the CLIs read (Claude Code sends ANTHROPIC_BETAS in anthropic-beta and
// goes where ANTHROPIC_BASE_URL says): the bench's configuration is the
// plan's alone, so none of them may change a request.
var hostConfig = []string{
	"ANTHROPIC_BETAS=host-config-beta", "ANTHROPIC_BASE_URL=https://host-config.example",
	"ANTHROPIC_MODEL=host-config-model", "ANTHROPIC_SMALL_FAST_MODEL=host-config-model",
	"ANTHROPIC_DEFAULT_HAIKU_MODEL=host-config-model", "OPENAI_BASE_URL=https://host-config.example/v1",
	"OPENAI_ORGANIZATION=host-config-org", "OPENAI_PROJECT=host-config-project",
}

// realKey runs the agent against a real model's route: the key is the
// host's, held by the egress proxy, and the model is a TLS stand-in (the
// scripted model behind https://example.com) reached through the proxy,
// as a provider's API is. The real key reaches the model in the header
// the provider reads it from, and only there; nothing the trial kept
// holds it. Then the stand-in answers every request with an error that
// quotes the key it got, as providers do for a bad key: the agent prints
// that error, and still nothing kept holds the key. The host also holds
// provider settings (hostConfig), which change nothing the model gets.
func (b *bench) realKey(t *testing.T) {
	a := b.a
	require.NotEmpty(t, a.Provider, "the adapter names its provider")
	var echo atomic.Bool
	scripted := b.scriptedModel(nil)
	rec := &recorder{keyHeader: a.KeyHeader, next: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if echo.Load() {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprintf(w, `{"type":"error","error":{"type":"authentication_error","code":"invalid_api_key","message":"Incorrect API key provided: %s"}}`,
				r.Header.Get(a.KeyHeader))
			return
		}
		scripted.ServeHTTP(w, r)
	})}
	srv := httptest.NewUnstartedServer(rec)
	srv.StartTLS()
	t.Cleanup(srv.Close)
	roots := x509.NewCertPool()
	roots.AddCert(srv.Certificate())
	ag := a.New(t, append(slices.Clone(hostEnv), hostConfig...), b.tmp, launch.Network{Resolver: loopbackResolver{}, UpstreamRoots: roots, LoopbackHosts: []string{standInHost}})
	m := rundir.Model{Provider: a.Provider, ID: model.ID, KeyEnv: a.KeyEnv, InputPrice: 3, OutputPrice: 15,
		BaseURL: fmt.Sprintf("https://%s:%d/v1", standInHost, srv.Listener.Addr().(*net.TCPAddr).Port)}

	row, dir := b.trialOf(t, ag, m, "weather-high-oslo", pairbench.Treatment, rundir.PlanCaps{TimeS: roomyTimeS, Turns: 25, SpendUSD: 1})
	assert.Equal(t, pairbench.Correct, row.Outcome, row.Reason)
	want := canary
	if strings.EqualFold(a.KeyHeader, "Authorization") {
		want = "Bearer " + canary
	}
	rec.mu.Lock()
	keys, bodies := rec.keys, strings.Join(rec.bodies, "\n")
	rec.mu.Unlock()
	require.NotEmpty(t, keys, "the model was reached through the proxy")
	for _, k := range keys {
		assert.Equal(t, want, k, "every request carries the real key in %s", a.KeyHeader)
	}
	assert.Equal(t, strings.Count(bodies, canary), len(keys), "the key is in the key header only, never in a body")
	assert.NotContains(t, bodies, "pairbench_placeholder_", "no placeholder reaches the model")
	assert.NotContains(t, strings.Join(rec.headers, "\n")+bodies, "host-config",
		"no setting of the host's provider variables changes what the agent sends")
	b.noCanary(t, dir)
	assert.NotContains(t, fmt.Sprint(row), canary)

	echo.Store(true)
	row, dir = b.trialOf(t, ag, m, "weather-high-oslo", pairbench.Control, rundir.PlanCaps{TimeS: roomyTimeS, Turns: 25, SpendUSD: 1})
	assert.NotEqual(t, pairbench.Correct, row.Outcome)
	assert.Contains(t, row.Error+row.Reason, "Incorrect API key provided", "the agent printed the model's error")
	assert.NotContains(t, fmt.Sprint(row), canary, "the row does not hold the key the error quoted")
	b.noCanary(t, dir)
}
