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

// recorder is a Handler that records every delivery it is given. If gate
// is set, each Handle waits for a value on it (or for its context to end).
type recorder struct {
	gate    chan struct{}
	started chan string // receives each delivery id as Handle begins, if set
	fail    func(d server.Delivery) error

	mu     sync.Mutex
	counts map[string]int // delivery id → Handle calls
	order  []server.Delivery
	ctxErr []error // ctx.Err() seen by each call that was released by its context
}

func (r *recorder) Handle(ctx context.Context, d server.Delivery) error {
	if r.started != nil {
		r.started <- d.ID
	}
	if r.gate != nil {
		select {
		case <-r.gate:
		case <-ctx.Done():
			r.mu.Lock()
			r.ctxErr = append(r.ctxErr, ctx.Err())
			r.mu.Unlock()
			return ctx.Err()
		}
	}
	r.mu.Lock()
	if r.counts == nil {
		r.counts = map[string]int{}
	}
	r.counts[d.ID]++
	r.order = append(r.order, d)
	r.mu.Unlock()
	if r.fail != nil {
		return r.fail(d)
	}
	return nil
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

// drain shuts s down, waiting for every queued delivery to be handled.
func drain(t *testing.T, s *server.Server) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	require.NoError(t, s.Shutdown(ctx))
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

// benchListener returns a loopback listener and its base URL.
func benchListener(b *testing.B) (net.Listener, string) {
	b.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(b, err)
	return l, "http://" + l.Addr().String()
}
