package launch_test

import (
	"context"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench/agent/launch"
	"github.com/pairbench/pairbench/rundir"
	"github.com/pairbench/pairbench/runner"
)

// toLoopback resolves every name to 127.0.0.1.
type toLoopback struct{}

func (toLoopback) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
}

const judgeCanary = "sk-judge-canary-0123456789"

// providerStandIn is a judge model's API over TLS on loopback, as
// api.example.com: it records what it was sent and answers as the
// provider does.
type providerStandIn struct {
	mu      sync.Mutex
	headers []http.Header
	bodies  []string
	srv     *httptest.Server
}

func newStandIn(t *testing.T, reply string) *providerStandIn {
	p := &providerStandIn{}
	p.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		p.mu.Lock()
		p.headers, p.bodies = append(p.headers, r.Header.Clone()), append(p.bodies, string(b))
		p.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, reply)
	}))
	p.srv.StartTLS()
	t.Cleanup(p.srv.Close)
	return p
}

func (p *providerStandIn) judge(t *testing.T, hostEnv ...string) *launch.Judge {
	roots := x509.NewCertPool()
	roots.AddCert(p.srv.Certificate())
	return launch.NewJudge(launch.JudgeConfig{HostEnv: hostEnv, TempRoot: t.TempDir(),
		Network: launch.Network{Resolver: toLoopback{}, UpstreamRoots: roots, LoopbackHosts: []string{"example.com"}}})
}

func (p *providerStandIn) baseURL() string {
	return fmt.Sprintf("https://example.com:%d/v1", p.srv.Listener.Addr().(*net.TCPAddr).Port)
}

// TestTheJudgeReachesItsModelThroughTheEgress: a judge on a provider's API
// (OpenAI's chat completions, Anthropic's messages) is asked through an
// egress proxy that holds the host's key: the key reaches the provider in
// the header it reads, the request pairbench made carried a placeholder
// (none reaches the provider, nor the key any body), and the reply's cost
// is its tokens at the model's price.
func TestTheJudgeReachesItsModelThroughTheEgress(t *testing.T) {
	req := runner.JudgeRequest{System: runner.JudgePrompt, User: `{"task": "t"}`, Caps: runner.Caps{Time: time.Minute, SpendUSD: 1}}
	t.Run("openai", func(t *testing.T) {
		p := newStandIn(t, `{"choices": [{"message": {"role": "assistant", "content": "{\"scores\": {}}"}}], "usage": {"prompt_tokens": 1000, "completion_tokens": 100}}`)
		req := req
		req.Model = rundir.Model{Provider: "openai", ID: "gpt-judge", BaseURL: p.baseURL(), InputPrice: 2, OutputPrice: 8}
		reply, err := p.judge(t, "OPENAI_API_KEY="+judgeCanary).Judge(t.Context(), req)
		require.NoError(t, err)
		assert.Equal(t, runner.JudgeReply{Text: `{"scores": {}}`, InputTokens: 1000, OutputTokens: 100, CostUSD: (1000*2 + 100*8) / 1e6}, reply)
		require.Len(t, p.headers, 1)
		assert.Equal(t, "Bearer "+judgeCanary, p.headers[0].Get("Authorization"))
		assert.Contains(t, p.bodies[0], `"model":"gpt-judge"`)
		assert.Contains(t, p.bodies[0], `"content":"{\"task\": \"t\"}"`)
		assert.NotContains(t, p.bodies[0], judgeCanary)
		assert.NotContains(t, p.bodies[0]+fmt.Sprint(p.headers[0]), "pairbench_placeholder_")
	})
	t.Run("anthropic", func(t *testing.T) {
		p := newStandIn(t, `{"content": [{"type": "text", "text": "verdict"}], "usage": {"input_tokens": 10, "output_tokens": 5}}`)
		req := req
		req.Model = rundir.Model{Provider: "anthropic", ID: "claude-judge", BaseURL: p.baseURL(), InputPrice: 3, OutputPrice: 15}
		reply, err := p.judge(t, "ANTHROPIC_API_KEY="+judgeCanary).Judge(t.Context(), req)
		require.NoError(t, err)
		assert.Equal(t, "verdict", reply.Text)
		require.Len(t, p.headers, 1)
		assert.Equal(t, judgeCanary, p.headers[0].Get("X-Api-Key"))
		assert.Empty(t, p.headers[0].Get("Authorization"))
		assert.Contains(t, p.bodies[0], `"system":"You are the judge`)
	})
	t.Run("no key", func(t *testing.T) {
		m := rundir.Model{Provider: "openai", ID: "gpt-judge"}
		assert.EqualError(t, launch.CheckJudge(m, nil), "judge: model openai/gpt-judge: OPENAI_API_KEY is not set")
		_, err := launch.NewJudge(launch.JudgeConfig{TempRoot: t.TempDir()}).Judge(t.Context(), runner.JudgeRequest{Model: rundir.Model{Provider: "openai", ID: "gpt-5"}})
		assert.EqualError(t, err, "judge: model openai/gpt-5: OPENAI_API_KEY is not set")
	})
	t.Run("no price", func(t *testing.T) {
		_, err := launch.NewJudge(launch.JudgeConfig{TempRoot: t.TempDir()}).Judge(t.Context(), runner.JudgeRequest{Model: rundir.Model{Provider: "openai", ID: "unpriced"}})
		assert.EqualError(t, err, "model openai/unpriced has no price; give it one so its spend can be capped")
	})
}
