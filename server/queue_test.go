package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench/server"
)

func TestRedeliveryIsProcessedOnce(t *testing.T) {
	rec := &recorder{}
	s := newServer(t, server.Config{Handler: rec})
	h := s.Handler()

	w := serve(h, delivery("pull_request", "d-1", payload(1)))
	require.Equal(t, http.StatusAccepted, w.Code)
	w = serve(h, delivery("pull_request", "d-1", payload(1)))
	assert.Equal(t, http.StatusOK, w.Code)
	assert.JSONEq(t, `{"status":"duplicate","delivery":"d-1"}`, w.Body.String())

	// The same delivery id from another installation is another delivery.
	w = serve(h, delivery("pull_request", "d-1", payload(2)))
	assert.Equal(t, http.StatusAccepted, w.Code)

	m := metrics(t, h)
	assert.Equal(t, "1", metricLine(m, `pairbench_webhook_deliveries_total{event="pull_request",result="duplicate"}`))
	drain(t, s)
	assert.Equal(t, 2, rec.calls("d-1"), "once per installation")
}

func TestConcurrentCopiesOfADeliveryRunOnce(t *testing.T) {
	rec := &recorder{}
	s := newServer(t, server.Config{Handler: rec})
	var wg sync.WaitGroup
	codes := make([]int, 20)
	for i := range codes {
		wg.Go(func() { codes[i] = serve(s.Handler(), delivery("pull_request", "same", payload(1))).Code })
	}
	wg.Wait()
	drain(t, s)
	accepted := 0
	for _, c := range codes {
		if c == http.StatusAccepted {
			accepted++
		} else {
			assert.Equal(t, http.StatusOK, c)
		}
	}
	assert.Equal(t, 1, accepted)
	assert.Equal(t, 1, rec.calls("same"))
}

func TestFailedDeliveryCanBeRedelivered(t *testing.T) {
	failures := map[string]bool{"flaky": true}
	var mu sync.Mutex
	rec := &recorder{fail: func(d server.Delivery) error {
		mu.Lock()
		defer mu.Unlock()
		if failures[d.ID] {
			delete(failures, d.ID)
			return errors.New("GitHub API unavailable")
		}
		return nil
	}}
	rec.started = make(chan string, 4)
	s := newServer(t, server.Config{Handler: rec, Workers: 1})
	require.Equal(t, http.StatusAccepted, serve(s.Handler(), delivery("pull_request", "flaky", payload(1))).Code)
	<-rec.started
	// The failure is recorded before the next delivery is taken: wait for
	// a second delivery to start on the single worker.
	require.Equal(t, http.StatusAccepted, serve(s.Handler(), delivery("pull_request", "other", payload(1))).Code)
	<-rec.started

	w := serve(s.Handler(), delivery("pull_request", "flaky", payload(1)))
	assert.Equal(t, http.StatusAccepted, w.Code, "a delivery whose handling failed is processed again when redelivered")
	drain(t, s)
	assert.Equal(t, 2, rec.calls("flaky"))
	m := metrics(t, s.Handler())
	assert.Equal(t, "1", metricLine(m, `pairbench_webhook_handled_total{event="pull_request",result="error"}`))
	assert.Equal(t, "2", metricLine(m, `pairbench_webhook_handled_total{event="pull_request",result="ok"}`))
}

func TestFullQueueAnswers503(t *testing.T) {
	rec := &recorder{gate: make(chan struct{}), started: make(chan string, 8)}
	s := newServer(t, server.Config{Handler: rec, Workers: 1, QueueSize: 2})
	h := s.Handler()

	require.Equal(t, http.StatusAccepted, serve(h, delivery("pull_request", "q0", payload(1))).Code)
	require.Equal(t, "q0", <-rec.started) // the worker holds q0
	require.Equal(t, http.StatusAccepted, serve(h, delivery("pull_request", "q1", payload(1))).Code)
	require.Equal(t, http.StatusAccepted, serve(h, delivery("pull_request", "q2", payload(1))).Code)

	w := serve(h, delivery("pull_request", "q3", payload(1)))
	assert.Equal(t, http.StatusServiceUnavailable, w.Code)
	assert.NotEmpty(t, w.Header().Get("Retry-After"))
	assert.Contains(t, w.Body.String(), "queue full")
	m := metrics(t, h)
	assert.Equal(t, "2", metricLine(m, "pairbench_webhook_queue_depth"))
	assert.Equal(t, "1", metricLine(m, `pairbench_webhook_deliveries_total{event="pull_request",result="queue_full"}`))

	close(rec.gate) // release every Handle
	// The refused delivery was not remembered: its redelivery is accepted.
	require.Eventually(t, func() bool {
		return serve(h, delivery("pull_request", "q3", payload(1))).Code == http.StatusAccepted
	}, 5*time.Second, 5*time.Millisecond)
	drain(t, s)
	for _, id := range []string{"q0", "q1", "q2", "q3"} {
		assert.Equal(t, 1, rec.calls(id), id)
	}
	assert.Equal(t, "0", metricLine(metrics(t, h), "pairbench_webhook_queue_depth"))
}

// listen serves s on a loopback port and returns its base URL and a
// channel that receives Serve's result.
func listen(t *testing.T, s *server.Server) (string, <-chan error) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- s.Serve(l) }()
	return "http://" + l.Addr().String(), done
}

func post(t *testing.T, base, event, id string, body []byte) (*http.Response, error) {
	t.Helper()
	req := delivery(event, id, body)
	req.RequestURI = ""
	u := base + "/webhook"
	out, err := http.NewRequestWithContext(t.Context(), http.MethodPost, u, bytes.NewReader(body))
	require.NoError(t, err)
	out.Header = req.Header
	resp, err := http.DefaultClient.Do(out)
	if err == nil {
		resp.Body.Close()
	}
	return resp, err
}

func TestShutdownDrainsTheQueue(t *testing.T) {
	rec := &recorder{gate: make(chan struct{}), started: make(chan string, 32)}
	s := newServer(t, server.Config{Handler: rec, Workers: 2, QueueSize: 32})
	base, served := listen(t, s)

	for i := range 20 {
		resp, err := post(t, base, "pull_request", fmt.Sprint("drain-", i), payload(1))
		require.NoError(t, err)
		require.Equal(t, http.StatusAccepted, resp.StatusCode)
	}
	<-rec.started
	<-rec.started // both workers busy, 18 queued

	shutdown := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		shutdown <- s.Shutdown(ctx)
	}()
	// Shutdown waits for the queue, not just the HTTP side.
	select {
	case err := <-shutdown:
		t.Fatalf("Shutdown returned %v with deliveries still queued", err)
	case <-time.After(50 * time.Millisecond):
	}
	close(rec.gate)
	require.NoError(t, <-shutdown)
	require.NoError(t, <-served, "Serve returns nil after Shutdown")
	assert.Equal(t, 20, rec.total())
	for i := range 20 {
		assert.Equal(t, 1, rec.calls(fmt.Sprint("drain-", i)))
	}

	_, err := post(t, base, "pull_request", "late", payload(1))
	assert.Error(t, err, "the listener is closed after Shutdown")
	assert.ErrorIs(t, s.Serve(nil), server.ErrClosed)
}

func TestShutdownGivesUpWhenItsContextEnds(t *testing.T) {
	var logs bytes.Buffer
	rec := &recorder{gate: make(chan struct{}), started: make(chan string, 8)}
	s := newServer(t, server.Config{Handler: rec, Workers: 1, QueueSize: 8,
		Logger: slog.New(slog.NewJSONHandler(&syncWriter{w: &logs}, nil))})
	for i := range 3 {
		require.Equal(t, http.StatusAccepted, serve(s.Handler(), delivery("pull_request", fmt.Sprint("stuck-", i), payload(1))).Code)
	}
	<-rec.started

	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	err := s.Shutdown(ctx)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.ErrorContains(t, err, "2 queued deliveries dropped")
	assert.Equal(t, []error{context.Canceled}, rec.ctxErr, "the running Handle sees its context cancelled")
	assert.Zero(t, rec.total())
	m := metrics(t, s.Handler())
	assert.Equal(t, "2", metricLine(m, `pairbench_webhook_handled_total{event="pull_request",result="dropped"}`))
	for _, id := range []string{"stuck-1", "stuck-2"} {
		assert.Contains(t, logs.String(), `"delivery":"`+id+`"`, "a dropped delivery is logged by id")
	}
}

func TestDeliveriesDuringShutdownAre503(t *testing.T) {
	rec := &recorder{}
	s := newServer(t, server.Config{Handler: rec})
	drain(t, s)
	w := serve(s.Handler(), delivery("pull_request", "after", payload(1)))
	assert.Equal(t, http.StatusServiceUnavailable, w.Code)
	assert.NotEmpty(t, w.Header().Get("Retry-After"))
	w = serve(s.Handler(), mustRequest(t, http.MethodGet, "/healthz"))
	assert.Equal(t, http.StatusServiceUnavailable, w.Code)
	assert.Zero(t, rec.total())
}

func TestHealthz(t *testing.T) {
	s := newServer(t, server.Config{Handler: &recorder{}})
	w := serve(s.Handler(), mustRequest(t, http.MethodGet, "/healthz"))
	assert.Equal(t, http.StatusOK, w.Code)
	assert.JSONEq(t, `{"status":"ok","queued":0}`, w.Body.String())
}

func TestHandlerPanicIsContained(t *testing.T) {
	rec := &recorder{fail: func(d server.Delivery) error {
		if d.ID == "boom" {
			panic("nil map in bot")
		}
		return nil
	}}
	s := newServer(t, server.Config{Handler: rec, Workers: 1})
	require.Equal(t, http.StatusAccepted, serve(s.Handler(), delivery("pull_request", "boom", payload(1))).Code)
	require.Equal(t, http.StatusAccepted, serve(s.Handler(), delivery("pull_request", "after-boom", payload(1))).Code)
	drain(t, s)
	assert.Equal(t, 1, rec.calls("after-boom"), "the worker survives a panic")
	assert.Equal(t, "1", metricLine(metrics(t, s.Handler()), `pairbench_webhook_handled_total{event="pull_request",result="panic"}`))
}

func TestMetricsExposed(t *testing.T) {
	m := server.NewMetrics()
	s := newServer(t, server.Config{Handler: &recorder{}, Metrics: m})
	serve(s.Handler(), delivery("pull_request", "m1", payload(1)))
	serve(s.Handler(), delivery("pull_request", "m2", payload(1)))
	m.Dispatched("local", "ok")
	m.Dispatched("local", "ok")
	m.Dispatched("actions", "error")
	m.SetRuns("running", 3)
	m.SetRuns("queued", 1)
	m.GitHubCall("issues.create_comment", 201)
	m.GitHubCall("checks.update", 422)
	m.SetRateLimitRemaining(42, 4999)
	drain(t, s)

	text := metrics(t, s.Handler())
	for series, want := range map[string]string{
		`pairbench_webhook_deliveries_total{event="pull_request",result="queued"}`:       "2",
		`pairbench_webhook_handled_total{event="pull_request",result="ok"}`:              "2",
		`pairbench_webhook_queue_depth`:                                                  "0",
		`pairbench_webhook_ack_seconds_count`:                                            "2",
		`pairbench_dispatches_total{backend="local",result="ok"}`:                        "2",
		`pairbench_dispatches_total{backend="actions",result="error"}`:                   "1",
		`pairbench_runs{state="running"}`:                                                "3",
		`pairbench_runs{state="queued"}`:                                                 "1",
		`pairbench_github_api_calls_total{code="201",operation="issues.create_comment"}`: "1",
		`pairbench_github_api_calls_total{code="422",operation="checks.update"}`:         "1",
		`pairbench_github_rate_limit_remaining{installation="42"}`:                       "4999",
	} {
		assert.Equal(t, want, metricLine(text, series), series)
	}
	assert.Contains(t, text, "go_goroutines ", "the Go collector is registered")

	// Each Metrics has its own registry: a second one starts from zero.
	other := newServer(t, server.Config{Handler: &recorder{}})
	assert.Empty(t, metricLine(metrics(t, other.Handler()), `pairbench_dispatches_total{backend="local",result="ok"}`))
}

// syncWriter serialises writes from concurrent loggers.
type syncWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

func (s *syncWriter) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.String()
}

func TestEveryDeliveryLogLineCarriesItsID(t *testing.T) {
	logs := &syncWriter{w: &bytes.Buffer{}}
	rec := &recorder{fail: func(d server.Delivery) error {
		d.Logger.Info("bot decided", "action", "plan bench")
		if d.ID == "fails" {
			return errors.New("no .pairbench.yml")
		}
		return nil
	}}
	s := newServer(t, server.Config{Handler: rec, Events: []string{"pull_request"},
		Logger: slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	h := s.Handler()
	serve(h, delivery("pull_request", "ok", payload(1)))
	serve(h, delivery("pull_request", "ok", payload(1))) // duplicate
	serve(h, delivery("pull_request", "fails", payload(1)))
	serve(h, delivery("star", "ignored", payload(1)))
	bad := delivery("pull_request", "unsigned", payload(1))
	bad.Header.Del("X-Hub-Signature-256")
	serve(h, bad)
	drain(t, s)

	lifecycle := map[string]bool{"shutting down": true, "stopped": true}
	seen := map[string]int{}
	for line := range strings.SplitSeq(strings.TrimSpace(logs.String()), "\n") {
		var rec map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &rec), line)
		if lifecycle[rec["msg"].(string)] {
			continue
		}
		id, ok := rec["delivery"].(string)
		if assert.True(t, ok, "log line without a delivery id: %s", line) {
			seen[id]++
		}
	}
	for _, id := range []string{"ok", "fails", "ignored", "unsigned"} {
		assert.Positive(t, seen[id], "no log line for delivery %s", id)
	}
	assert.GreaterOrEqual(t, seen["ok"], 4, "queued, duplicate, bot line, handled")
}
