package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench/server"
)

func TestRedeliveryIsADuplicate(t *testing.T) {
	rec := &recorder{}
	s := newServer(t, server.Config{Inbox: rec})
	h := s.Handler()
	require.Equal(t, http.StatusAccepted, serve(h, delivery("pull_request", "d-1", payload(1))).Code)
	w := serve(h, delivery("pull_request", "d-1", payload(1)))
	assert.Equal(t, http.StatusOK, w.Code)
	assert.JSONEq(t, `{"status":"duplicate","delivery":"d-1"}`, w.Body.String())
	assert.Equal(t, http.StatusAccepted, serve(h, delivery("pull_request", "d-1", payload(2))).Code, "another installation's")
	assert.Equal(t, "1", metricLine(metrics(t, h), `pairbench_webhook_deliveries_total{event="pull_request",result="duplicate"}`))
}

// TestTheAnswerWaitsForTheInbox: nothing is answered 2xx before the inbox
// has committed it.
func TestTheAnswerWaitsForTheInbox(t *testing.T) {
	rec := &recorder{gate: make(chan struct{})}
	s := newServer(t, server.Config{Inbox: rec})
	answered := make(chan int, 1)
	go func() { answered <- serve(s.Handler(), delivery("pull_request", "slow", payload(1))).Code }()
	select {
	case code := <-answered:
		t.Fatalf("answered %d before the delivery was stored", code)
	case <-time.After(200 * time.Millisecond):
	}
	rec.gate <- struct{}{}
	assert.Equal(t, http.StatusAccepted, <-answered)
	assert.Equal(t, 1, rec.calls("slow"))
}

func TestAStoreFailureIs503AndNotLost(t *testing.T) {
	var mu sync.Mutex
	down := true
	rec := &recorder{fail: func(server.Delivery) error {
		mu.Lock()
		defer mu.Unlock()
		if down {
			return errors.New("disk full")
		}
		return nil
	}}
	s := newServer(t, server.Config{Inbox: rec})
	w := serve(s.Handler(), delivery("pull_request", "d", payload(1)))
	assert.Equal(t, http.StatusServiceUnavailable, w.Code)
	assert.NotEmpty(t, w.Header().Get("Retry-After"))
	assert.Equal(t, "1", metricLine(metrics(t, s.Handler()), `pairbench_webhook_deliveries_total{event="pull_request",result="store_error"}`))
	mu.Lock()
	down = false
	mu.Unlock()
	assert.Equal(t, http.StatusAccepted, serve(s.Handler(), delivery("pull_request", "d", payload(1))).Code, "GitHub's redelivery is stored")
}

func TestAStuckStoreIs503WithinTheTimeout(t *testing.T) {
	rec := &recorder{gate: make(chan struct{})}
	s := newServer(t, server.Config{Inbox: rec, AcceptTimeout: 100 * time.Millisecond})
	start := time.Now()
	assert.Equal(t, http.StatusServiceUnavailable, serve(s.Handler(), delivery("pull_request", "d", payload(1))).Code)
	assert.Less(t, time.Since(start), 5*time.Second)
}

func TestDeliveriesDuringShutdownAre503(t *testing.T) {
	rec := &recorder{}
	s := newServer(t, server.Config{Inbox: rec})
	require.NoError(t, s.Shutdown(t.Context()))
	w := serve(s.Handler(), delivery("pull_request", "late", payload(1)))
	assert.Equal(t, http.StatusServiceUnavailable, w.Code)
	assert.Equal(t, "30", w.Header().Get("Retry-After"))
	assert.Zero(t, rec.total())
	assert.Equal(t, http.StatusServiceUnavailable, serve(s.Handler(), mustRequest(t, http.MethodGet, "/healthz")).Code)
}

func TestHealthz(t *testing.T) {
	s := newServer(t, server.Config{Inbox: &recorder{}})
	w := serve(s.Handler(), mustRequest(t, http.MethodGet, "/healthz"))
	assert.Equal(t, http.StatusOK, w.Code)
	assert.JSONEq(t, `{"status":"ok"}`, w.Body.String())
}

func TestAnInboxPanicIs500(t *testing.T) {
	rec := &recorder{fail: func(d server.Delivery) error {
		if d.ID == "boom" {
			panic("nil map in bot")
		}
		return nil
	}}
	s := newServer(t, server.Config{Inbox: rec})
	assert.Equal(t, http.StatusInternalServerError, serve(s.Handler(), delivery("pull_request", "boom", payload(1))).Code)
	assert.Equal(t, http.StatusAccepted, serve(s.Handler(), delivery("pull_request", "after-boom", payload(1))).Code)
}

func TestReportsAreMounted(t *testing.T) {
	reports := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("report " + r.URL.Path)) })
	s := newServer(t, server.Config{Inbox: &recorder{}, Reports: reports})
	w := serve(s.Handler(), mustRequest(t, http.MethodGet, "/runs/r1/report"))
	assert.Equal(t, http.StatusOK, w.Code)
	assert.Equal(t, "report /runs/r1/report", w.Body.String())
}

func TestMetricsExposed(t *testing.T) {
	m := server.NewMetrics()
	s := newServer(t, server.Config{Inbox: &recorder{}, Metrics: m})
	serve(s.Handler(), delivery("pull_request", "m1", payload(1)))
	serve(s.Handler(), delivery("pull_request", "m2", payload(1)))
	m.Dispatched("local", "ok")
	m.Dispatched("local", "ok")
	m.Dispatched("actions", "refused")
	m.GaveUp("check")
	m.GitHubCall("issues.create_comment", 201)
	m.GitHubCall("checks.update", 422)
	m.SetRateLimitRemaining(42, 4999)

	text := metrics(t, s.Handler())
	for series, want := range map[string]string{
		`pairbench_webhook_deliveries_total{event="pull_request",result="stored"}`:       "2",
		`pairbench_webhook_ack_seconds_count`:                                            "2",
		`pairbench_dispatches_total{backend="local",result="ok"}`:                        "2",
		`pairbench_dispatches_total{backend="actions",result="refused"}`:                 "1",
		`pairbench_jobs_given_up_total{kind="check"}`:                                    "1",
		`pairbench_github_api_calls_total{code="201",operation="issues.create_comment"}`: "1",
		`pairbench_github_api_calls_total{code="422",operation="checks.update"}`:         "1",
		`pairbench_github_rate_limit_remaining{installation="42"}`:                       "4999",
	} {
		assert.Equal(t, want, metricLine(text, series), series)
	}
	assert.Contains(t, text, "go_goroutines ", "the Go collector is registered")
	other := newServer(t, server.Config{Inbox: &recorder{}})
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
		d.Logger.Info("inbox stores it")
		if d.ID == "fails" {
			return errors.New("disk full")
		}
		return nil
	}}
	s := newServer(t, server.Config{Inbox: rec, Events: []string{"pull_request"},
		Logger: slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	h := s.Handler()
	serve(h, delivery("pull_request", "ok", payload(1)))
	serve(h, delivery("pull_request", "ok", payload(1))) // duplicate
	serve(h, delivery("pull_request", "fails", payload(1)))
	serve(h, delivery("star", "ignored", payload(1)))
	bad := delivery("pull_request", "unsigned", payload(1))
	bad.Header.Del("X-Hub-Signature-256")
	serve(h, bad)
	require.NoError(t, s.Shutdown(context.Background()))

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
	assert.GreaterOrEqual(t, seen["ok"], 4, "inbox line, stored, inbox line, duplicate")
}

// TestAPanickingInboxIsA500WithItsStackLogged: a panic while a delivery is
// handled answers 500, names the delivery in the log with the stack where
// it happened, and leaves the server serving.
func TestAPanickingInboxIsA500WithItsStackLogged(t *testing.T) {
	logs := &syncWriter{w: &bytes.Buffer{}}
	rec := &recorder{fail: func(d server.Delivery) error {
		if d.ID == "boom" {
			panicInTheInbox()
		}
		return nil
	}}
	s := newServer(t, server.Config{Inbox: rec, Events: []string{"pull_request"},
		Logger: slog.New(slog.NewJSONHandler(logs, nil))})
	h := s.Handler()
	w := serve(h, delivery("pull_request", "boom", payload(1)))
	assert.Equal(t, http.StatusInternalServerError, w.Code)
	assert.JSONEq(t, `{"error":"internal error"}`, w.Body.String())
	assert.Equal(t, http.StatusAccepted, serve(h, delivery("pull_request", "after", payload(1))).Code)

	var logged map[string]any
	for line := range strings.SplitSeq(strings.TrimSpace(logs.String()), "\n") {
		var rec map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &rec), line)
		if rec["msg"] == "request panicked" {
			logged = rec
		}
	}
	require.NotNil(t, logged, logs.String())
	assert.Equal(t, "boom", logged["delivery"])
	assert.Equal(t, "the inbox fell over", logged["panic"])
	assert.Contains(t, logged["stack"], "panicInTheInbox", "the stack is where the panic happened")
}

func panicInTheInbox() { panic("the inbox fell over") }
