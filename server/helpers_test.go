package server_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench/server"
)

var testSecret = []byte("It's a Secret to Everybody")

// recorder is an Inbox that keeps deliveries in memory, refusing a
// delivery key it holds. If gate is set, each Accept waits for a value on
// it (or for its context to end); fail, if set, decides its error.
type recorder struct {
	gate chan struct{}
	fail func(d server.Delivery) error

	mu     sync.Mutex
	counts map[string]int // delivery id → accepted copies
	keys   map[string]bool
	order  []server.Delivery
}

func (r *recorder) Accept(ctx context.Context, d server.Delivery) (bool, error) {
	if r.gate != nil {
		select {
		case <-r.gate:
		case <-ctx.Done():
			return false, ctx.Err()
		}
	}
	if r.fail != nil {
		if err := r.fail(d); err != nil {
			return false, err
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.counts == nil {
		r.counts, r.keys = map[string]int{}, map[string]bool{}
	}
	key := fmt.Sprint(d.InstallationID, "/", d.ID)
	if r.keys[key] {
		return false, nil
	}
	r.keys[key] = true
	r.counts[d.ID]++
	r.order = append(r.order, d)
	return true, nil
}

func (r *recorder) calls(id string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.counts[id]
}

func (r *recorder) total() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.order)
}

// newServer returns a Server with the test secret and h, shut down (and
// drained) when the test ends if the test has not done so.
func newServer(t *testing.T, cfg server.Config) *server.Server {
	t.Helper()
	if cfg.Secret == nil {
		cfg.Secret = testSecret
	}
	s, err := server.New(cfg)
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		s.Shutdown(ctx)
	})
	return s
}

// payload returns a small pull_request-like body for an installation.
func payload(installation int64) []byte {
	return fmt.Appendf(nil, `{"action":"opened","number":7,"installation":{"id":%d,"node_id":"MDIzOkludGVncmF0aW9uSW5zdGFsbGF0aW9uMQ=="},"repository":{"full_name":"octo/registry"}}`, installation)
}

// delivery builds a correctly signed JSON delivery.
func delivery(event, id string, body []byte) *http.Request {
	req := httptest.NewRequest(http.MethodPost, "/webhook", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-GitHub-Event", event)
	req.Header.Set("X-GitHub-Delivery", id)
	req.Header.Set("X-Hub-Signature-256", server.Sign(testSecret, body))
	return req
}

// serve runs one request through h and returns the recorded answer.
func serve(h http.Handler, req *http.Request) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w
}

// metrics returns the text of GET /metrics.
func metrics(t *testing.T, h http.Handler) string {
	t.Helper()
	w := serve(h, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	require.Equal(t, http.StatusOK, w.Code)
	body, err := io.ReadAll(w.Body)
	require.NoError(t, err)
	return string(body)
}

// metricLine finds the sample line for name{labels} and returns its value
// text, or "" if absent.
func metricLine(text, series string) string {
	for line := range strings.SplitSeq(text, "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			return v
		}
	}
	return ""
}

// listenTB returns a loopback listener and its base URL.
func listenTB(tb testing.TB) (net.Listener, string) {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(tb, err)
	return l, "http://" + l.Addr().String()
}
