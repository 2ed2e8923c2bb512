package server_test

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench/server"
)

var (
	loadDuration = flag.Duration("load.duration", 2*time.Second, "how long TestLoad sends deliveries (the full test: 30s)")
	loadRate     = flag.Int("load.rate", 500, "deliveries per second TestLoad sends")
)

// loadPad is the pull request description every load payload carries,
// JSON-quoted once.
var loadPad = strconv.Quote(strings.Repeat("Adds find_books and get_weather tools; see the intents under bench/. ", 170))

// loadPayload returns a pull_request-sized body (about 12 KiB) for delivery n.
func loadPayload(n int) []byte {
	return fmt.Appendf(nil, `{"action":"synchronize","number":%d,"installation":{"id":%d},"pull_request":{"head":{"sha":"%040x"},"body":%s},"repository":{"full_name":"octo/registry"}}`,
		n, 1+n%3, n, loadPad)
}

// counter is a Handler that counts calls per delivery id and keeps nothing
// else, so a long load test stays small.
type counter struct {
	mu     sync.Mutex
	counts map[string]int
	n      int
}

func (c *counter) Handle(_ context.Context, d server.Delivery) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.counts == nil {
		c.counts = map[string]int{}
	}
	c.counts[d.ID]++
	c.n++
	return nil
}

func (c *counter) calls(id string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.counts[id]
}

func (c *counter) total() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// sample is one delivery's fate as the client saw it.
type sample struct {
	status int
	err    error
	ack    time.Duration // request start to answer
	lag    time.Duration // how late the request started against the schedule
}

// TestLoad sends signed deliveries over loopback at -load.rate per second for
// -load.duration, with every 50th a redelivery of the one before, and checks
// that none failed, none was lost and none was handled twice. It logs the
// acknowledgement latencies; run the full version with
//
//	go test ./server -run TestLoad -load.duration=30s -v
func TestLoad(t *testing.T) {
	rate, dur := *loadRate, *loadDuration
	total := int(float64(rate) * dur.Seconds())
	require.Positive(t, total)

	rec := &counter{}
	s := newServer(t, server.Config{Handler: rec, Workers: 4, QueueSize: 4096, Logger: slog.New(slog.DiscardHandler)})
	base, served := listen(t, s)
	client := &http.Client{
		Timeout:   10 * time.Second,
		Transport: &http.Transport{MaxIdleConns: 128, MaxIdleConnsPerHost: 128},
	}
	defer client.CloseIdleConnections()

	type job struct {
		n    int
		id   string
		body []byte
		due  time.Time
	}
	jobs := make(chan job, 1024)
	samples := make([]sample, total)
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			for j := range jobs {
				samples[j.n] = send(t.Context(), client, base, j.id, j.body, j.due)
			}
		})
	}

	ids := make([]string, total)
	start := time.Now()
	interval := time.Second / time.Duration(rate)
	for n := range total {
		redel := n%50 == 49
		src := n
		if redel {
			src = n - 1
		}
		ids[n] = fmt.Sprintf("load-%06d", src)
		due := start.Add(time.Duration(n) * interval)
		time.Sleep(time.Until(due))
		jobs <- job{n: n, id: ids[n], body: loadPayload(src), due: due}
	}
	close(jobs)
	wg.Wait()
	elapsed := time.Since(start)

	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	require.NoError(t, s.Shutdown(ctx), "drain after the load")
	require.NoError(t, <-served)

	// Per delivery id: exactly one 202; every redelivery 200 (duplicate),
	// whichever copy arrived first.
	var errs, lost, dup int
	unique := map[string]bool{}
	accepted := map[string]int{}
	for n, smp := range samples {
		unique[ids[n]] = true
		switch {
		case smp.err == nil && smp.status == http.StatusAccepted:
			accepted[ids[n]]++
		case smp.err == nil && smp.status == http.StatusOK:
		default:
			errs++
			if errs <= 5 {
				t.Errorf("delivery %d (%s): status %d, err %v", n, ids[n], smp.status, smp.err)
			}
		}
	}
	for id := range unique {
		if accepted[id] != 1 {
			errs++
			t.Errorf("delivery %s accepted %d times; want once", id, accepted[id])
		}
	}
	for id := range unique {
		switch c := rec.calls(id); {
		case c == 0:
			lost++
		case c > 1:
			dup++
		}
	}
	assert.Zero(t, errs, "errors")
	assert.Zero(t, lost, "deliveries never handled")
	assert.Zero(t, dup, "deliveries handled more than once")
	assert.Equal(t, len(unique), rec.total(), "handler calls")

	acks := make([]time.Duration, 0, total)
	var maxLag time.Duration
	for _, smp := range samples {
		acks = append(acks, smp.ack)
		maxLag = max(maxLag, smp.lag)
	}
	slices.Sort(acks)
	t.Logf("%d deliveries (%d unique) in %v at %.0f/s over loopback: errors %d, lost %d, duplicated %d",
		total, len(unique), elapsed.Round(time.Millisecond), float64(total)/elapsed.Seconds(), errs, lost, dup)
	t.Logf("acknowledgement latency: p50 %v, p90 %v, p99 %v, max %v; worst start lag against schedule %v",
		pct(acks, 50), pct(acks, 90), pct(acks, 99), acks[len(acks)-1], maxLag.Round(time.Microsecond))
}

func pct(sorted []time.Duration, p int) time.Duration {
	i := (len(sorted)*p + 99) / 100
	return sorted[max(0, min(i, len(sorted))-1)].Round(time.Microsecond)
}

func send(ctx context.Context, client *http.Client, base, id string, body []byte, due time.Time) sample {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/webhook", bytes.NewReader(body))
	if err != nil {
		return sample{err: err}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-GitHub-Event", "pull_request")
	req.Header.Set("X-GitHub-Delivery", id)
	req.Header.Set("X-Hub-Signature-256", server.Sign(testSecret, body))
	begin := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return sample{err: err, lag: begin.Sub(due)}
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return sample{status: resp.StatusCode, ack: time.Since(begin), lag: begin.Sub(due)}
}

// BenchmarkWebhookAck measures one signed delivery's acknowledgement over
// loopback, from request to answer, with the handler doing nothing.
func BenchmarkWebhookAck(b *testing.B) {
	s, err := server.New(server.Config{Secret: testSecret, Handler: server.HandlerFunc(func(context.Context, server.Delivery) error { return nil }),
		QueueSize: 1 << 16, DedupeMax: 1 << 20})
	require.NoError(b, err)
	defer s.Shutdown(context.Background())
	l, base := benchListener(b)
	go s.Serve(l)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8}}
	defer client.CloseIdleConnections()
	body := loadPayload(1)
	i := 0
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		smp := send(b.Context(), client, base, fmt.Sprint("bench-", i), body, time.Now())
		if smp.err != nil || smp.status != http.StatusAccepted {
			b.Fatalf("delivery %d: %d %v", i, smp.status, smp.err)
		}
		i++
	}
}
