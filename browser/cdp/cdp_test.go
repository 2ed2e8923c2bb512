package cdp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench/browser/browsertest"
	"github.com/pairbench/pairbench/browser/cdp"
	"github.com/pairbench/pairbench/browser/driver"
	"github.com/pairbench/pairbench/browser/local"
	"github.com/pairbench/pairbench/browser/remote"
	"github.com/pairbench/pairbench/internal/offline"
	"github.com/pairbench/pairbench/internal/realstack"
	"github.com/pairbench/pairbench/internal/sandboxtest"
	"github.com/pairbench/pairbench/runner"
	"github.com/pairbench/pairbench/sandbox"
)

func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == sandbox.InitArg {
		os.Exit(sandbox.RunInit(os.Args[2:]))
	}
	offline.Main(m)
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// service is a fake CDP browser service at the transport, in the shape
// such services have: POST /v1/sessions answers {"id", "connect":
// {"websocketUrl"}}, POST /v1/sessions/{id}/release ends the browser, and
// /connect?session=ID&key=SECRET is the browser's websocket. With
// template set, a first connection to an unknown session starts its
// browser (a service whose client names the session). Its browsers are real
// local Chromiums.
type service struct {
	secret   string
	browsers runner.Browsers
	srv      *httptest.Server
	template bool

	mu       sync.Mutex
	sessions map[string]runner.Browser
	bodies   []string
	n        int
}

func newService(t *testing.T, browsers runner.Browsers, template bool) *service {
	s := &service{secret: "svc-secret-123", browsers: browsers, template: template, sessions: map[string]runner.Browser{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/sessions", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Api-Key") != s.secret {
			http.Error(w, `{"error":"bad key"}`, http.StatusUnauthorized)
			return
		}
		body, _ := io.ReadAll(r.Body)
		b, err := s.browsers.Open(context.Background(), runner.BrowserSpec{})
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		s.mu.Lock()
		s.bodies = append(s.bodies, string(body))
		s.n++
		id := fmt.Sprintf("sess-%d", s.n)
		s.sessions[id] = b
		s.mu.Unlock()
		json.NewEncoder(w).Encode(map[string]any{"id": id, "connect": map[string]string{
			"websocketUrl": "ws://" + r.Host + "/connect?session=" + id + "&key=" + s.secret}})
	})
	mux.HandleFunc("POST /v1/sessions/{id}/release", func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		b := s.sessions[r.PathValue("id")]
		delete(s.sessions, r.PathValue("id"))
		s.mu.Unlock()
		if b == nil {
			http.NotFound(w, r)
			return
		}
		b.Close(context.Background())
	})
	mux.HandleFunc("GET /connect", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("key") != s.secret {
			http.Error(w, "bad key", http.StatusUnauthorized)
			return
		}
		id := r.URL.Query().Get("session")
		s.mu.Lock()
		b := s.sessions[id]
		s.mu.Unlock()
		if b == nil && s.template && id != "" {
			var err error
			if b, err = s.browsers.Open(context.Background(), runner.BrowserSpec{}); err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			s.mu.Lock()
			s.sessions[id] = b
			s.mu.Unlock()
		}
		if b == nil {
			http.NotFound(w, r)
			return
		}
		browsertest.ServeDevTools(w, r, b)
	})
	s.srv = httptest.NewServer(mux)
	t.Cleanup(func() {
		s.srv.Close()
		for _, id := range s.live() {
			s.sessions[id].Close(context.Background())
		}
	})
	return s
}

func (s *service) live() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ids []string
	for id := range s.sessions {
		ids = append(ids, id)
	}
	return ids
}

// pairConfig is the fake's create/release pair.
func (s *service) pairConfig() cdp.Config {
	return cdp.Config{
		Name:           "fakecloud",
		Create:         &cdp.Request{Method: "POST", URL: s.srv.URL + "/v1/sessions", Headers: map[string]string{"X-Api-Key": "{secret}"}, Body: `{"stealth": {stealth}}`},
		Release:        &cdp.Request{Method: "POST", URL: s.srv.URL + "/v1/sessions/{id}/release", Headers: map[string]string{"X-Api-Key": "{secret}"}},
		WebSocketField: "connect.websocketUrl",
		IDField:        "id",
		Secret:         s.secret,
	}
}

func provider(t *testing.T, cfg cdp.Config) (*remote.Provider, string) {
	svc, err := cdp.New(cfg)
	require.NoError(t, err)
	dir := sandboxtest.TempDir(t)
	p, err := remote.New(remote.Config{Service: svc, TempDir: dir, Log: quiet, Driver: remoteDriverConfig})
	require.NoError(t, err)
	t.Cleanup(func() { p.Close(context.Background()) })
	return p, dir
}

func chromium(t *testing.T, hosts map[string]string) (*local.Provider, string) {
	realstack.Need(t, realstack.Bubblewrap, realstack.Chromium)
	dir := sandboxtest.TempDir(t)
	c, err := local.New(local.Config{Hosts: hosts, TempDir: dir, Log: quiet})
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c, dir
}

func held(t *testing.T, s *service, p *remote.Provider, dirs ...string) []string {
	h := append(s.live(), p.Live()...)
	for _, dir := range dirs {
		entries, err := os.ReadDir(dir)
		require.NoError(t, err)
		for _, e := range entries {
			h = append(h, e.Name())
		}
	}
	return h
}

// TestProviderContract holds a configured create/release service to the
// contract every provider passes.
func TestProviderContract(t *testing.T) {
	browsertest.Run(t, func(t *testing.T, hosts map[string]string) browsertest.Subject {
		c, cdir := chromium(t, hosts)
		s := newService(t, c, false)
		p, pdir := provider(t, s.pairConfig())
		return browsertest.Subject{
			Browsers:    p,
			Shutdown:    p.Close,
			Held:        func() []string { return held(t, s, p, cdir, pdir) },
			Unsupported: runner.BrowserSpec{Profile: "shopper"}, // the configuration has no {profile}
		}
	})
}

func TestTemplateServiceReachesOneBrowserPerID(t *testing.T) {
	c, cdir := chromium(t, nil)
	s := newService(t, c, true)
	wsURL := strings.Replace(s.srv.URL, "http://", "ws://", 1) + "/connect?session={id}&key={secret}"
	p, pdir := provider(t, cdp.Config{Name: "templated", URL: wsURL, Secret: s.secret,
		Release: &cdp.Request{URL: s.srv.URL + "/v1/sessions/{id}/release"}})
	b, err := p.Open(t.Context(), runner.BrowserSpec{})
	require.NoError(t, err)
	require.Len(t, s.live(), 1, "one browser for the id")
	agent := browsertest.DialDevTools(t, b.DevTools())
	_, err = agent.LiveTools(t.Context())
	require.NoError(t, err)
	assert.Len(t, s.live(), 1, "the agent's connection reaches the same browser")
	require.NoError(t, b.Close(t.Context()))
	assert.Empty(t, held(t, s, p, cdir, pdir))
}

func TestPairSendsTheSpecAndRefusesWhatItCannotCarry(t *testing.T) {
	c, _ := chromium(t, nil)
	s := newService(t, c, false)
	p, _ := provider(t, s.pairConfig())
	b, err := p.Open(t.Context(), runner.BrowserSpec{Stealth: true})
	require.NoError(t, err)
	require.NoError(t, b.Close(t.Context()))
	assert.Equal(t, []string{`{"stealth": true}`}, s.bodies)

	_, err = p.Open(t.Context(), runner.BrowserSpec{Profile: "shopper"})
	assert.ErrorContains(t, err, `profile "shopper" asked, but the service's configuration has no {profile}`)
}

func TestConfigErrorsSayWhatIsMissing(t *testing.T) {
	for _, c := range []struct {
		cfg  cdp.Config
		want string
	}{
		{cdp.Config{}, "configure a websocket URL template (url) or a create request (create)"},
		{cdp.Config{URL: "wss://cloud.example/connect"}, "needs {id}"},
		{cdp.Config{URL: "https://cloud.example/{id}"}, "want a ws or wss URL"},
		{cdp.Config{Create: &cdp.Request{URL: "https://cloud.example/s"}}, "needs websocket_field and id_field"},
		{cdp.Config{Create: &cdp.Request{URL: "https://cloud.example/s"}, WebSocketField: "ws", IDField: "id"}, "needs its release request"},
		{cdp.Config{URL: "wss://cloud.example/{id}?k={secret}", SecretEnv: "CLOUD_KEY"}, "uses {secret}: set CLOUD_KEY"},
	} {
		_, err := cdp.New(c.cfg)
		assert.ErrorContains(t, err, c.want)
	}
	_, err := cdp.ParseConfig([]byte(`{"url": "wss://x/{id}", "surprise": 1}`))
	assert.ErrorContains(t, err, "unknown field")
}

func TestQuotaAndErrorsNeverQuoteTheSecret(t *testing.T) {
	mux := http.NewServeMux()
	calls := 0
	mux.HandleFunc("/v1/sessions", func(w http.ResponseWriter, r *http.Request) {
		calls++
		if calls == 1 {
			w.Header().Set("Retry-After", "7")
			http.Error(w, "too many sessions", http.StatusTooManyRequests)
			return
		}
		http.Error(w, "boom", http.StatusBadGateway)
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	svc, err := cdp.New(cdp.Config{Create: &cdp.Request{URL: srv.URL + "/v1/sessions?key={secret}"},
		Release: &cdp.Request{URL: srv.URL + "/r/{id}"}, WebSocketField: "ws", IDField: "id", Secret: "TOPSECRET"})
	require.NoError(t, err)
	_, err = svc.Create(t.Context(), runner.BrowserSpec{})
	var q *remote.QuotaError
	require.ErrorAs(t, err, &q)
	assert.Equal(t, 7*time.Second, q.RetryAfter)
	assert.NotContains(t, err.Error(), "TOPSECRET")
	_, err = svc.Create(t.Context(), runner.BrowserSpec{})
	assert.ErrorContains(t, err, "HTTP 502: boom")
	assert.NotContains(t, err.Error(), "TOPSECRET")
}

// remoteDriverConfig is how the tests' providers drive a remote browser:
// the contract's stalled page runs ParseTimeout out twice, so it stays
// short, while the start (the DevTools handshake) and a load may take long
// on a busy machine (a 1 s parse and 5 s load bound, and the default start
// bound, failed there).
var remoteDriverConfig = driver.Config{Log: quiet, StartTimeout: 2 * time.Minute, ParseTimeout: 10 * time.Second, LoadTimeout: 2 * time.Minute}
