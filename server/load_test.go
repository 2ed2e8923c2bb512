package server_test

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench/server"
	"github.com/pairbench/pairbench/state"
	"github.com/pairbench/pairbench/state/statetest"
)

var (
	loadDuration = flag.Duration("load.duration", 2*time.Second, "how long the load sends deliveries (the full figures: 30s)")
	loadRate     = flag.Int("load.rate", 500, "deliveries per second the load sends")
	loadWork     = flag.Bool("load.work", true, "BenchmarkWebhookLoad: River works the stored deliveries' jobs while the load runs (false: the durable write alone)")
)

func TestMain(m *testing.M) {
	code := m.Run()
	statetest.Stop()
	os.Exit(code)
}

// loadPad is the pull request description every load payload carries,
// JSON-quoted once.
var loadPad = strconv.Quote(strings.Repeat("Adds find_books and get_weather tools; see the intents under bench/. ", 170))

// loadPayload returns a pull_request-sized body (about 12 KiB) for delivery n.
func loadPayload(n int) []byte {
	return fmt.Appendf(nil, `{"action":"synchronize","number":%d,"installation":{"id":%d},"pull_request":{"head":{"sha":"%040x"},"body":%s},"repository":{"full_name":"octo/registry"}}`,
		n, 1+n%3, n, loadPad)
}

// memoryInbox is the service's acknowledgement path before durable state:
// a delivery-id set in memory and a channel to a worker, answered at once.
// It is the baseline of BenchmarkWebhookLoad, and loses everything queued
// when the process dies.
type memoryInbox struct {
	mu    sync.Mutex
	seen  map[string]bool
	queue chan server.Delivery
	done  atomic.Int64
}

func newMemoryInbox() *memoryInbox {
	m := &memoryInbox{seen: map[string]bool{}, queue: make(chan server.Delivery, 1<<16)}
	go func() {
		for range m.queue {
			m.done.Add(1)
		}
	}()
	return m
}

func (m *memoryInbox) Accept(_ context.Context, d server.Delivery) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	key := fmt.Sprint(d.InstallationID, "/", d.ID)
	if m.seen[key] {
		return false, nil
	}
	m.seen[key] = true
	m.queue <- d
	return true, nil
}

// worked counts the DeliveryJobs River runs, as the bot's worker would.
type worked struct {
	river.WorkerDefaults[state.DeliveryJob]
	n atomic.Int64
}

func (w *worked) Work(context.Context, *river.Job[state.DeliveryJob]) error {
	w.n.Add(1)
	return nil
}

// durableInbox opens a state store on dialect, with its delivery jobs
// worked if work, and returns it as an Inbox.
func durableInbox(tb testing.TB, dialect string, work bool) (server.Inbox, *state.Store, *worked) {
	cfg := statetest.Config(tb, dialect)
	w := &worked{}
	if work {
		workers := river.NewWorkers()
		river.AddWorker(workers, w)
		cfg.Workers = workers
	}
	st, err := state.Open(context.Background(), cfg)
	require.NoError(tb, err)
	if work {
		require.NoError(tb, st.Start(context.Background()))
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if work {
			_ = st.Stop(ctx, ctx)
		}
		_ = st.Close()
	})
	inbox := server.InboxFunc(func(ctx context.Context, d server.Delivery) (bool, error) {
		return st.Accept(ctx, state.Delivery{Installation: d.InstallationID, ID: d.ID, Event: d.Event, Payload: d.Payload})
	})
	return inbox, st, w
}

// sample is one delivery's fate as the client saw it.
type sample struct {
	status int
	err    error
	ack    time.Duration // request start to answer
}

// loadResult is what runLoad saw.
type loadResult struct {
	samples []sample
	ids     []string
	elapsed time.Duration
}

// runLoad sends signed deliveries over loopback at rate per second for d,
// every 50th a redelivery of the one before, from 64 connections.
func runLoad(tb testing.TB, inbox server.Inbox, rate int, d time.Duration) loadResult {
	total := int(float64(rate) * d.Seconds())
	require.Positive(tb, total)
	s, err := server.New(server.Config{Secret: testSecret, Inbox: inbox, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(tb, err)
	l, base := listenTB(tb)
	go s.Serve(l)
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		s.Shutdown(ctx)
	}()
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConns: 128, MaxIdleConnsPerHost: 128}}
	defer client.CloseIdleConnections()

	type job struct {
		n    int
		id   string
		body []byte
	}
	jobs := make(chan job, 1024)
	res := loadResult{samples: make([]sample, total), ids: make([]string, total)}
	var wg sync.WaitGroup
	for range 64 {
		wg.Go(func() {
			for j := range jobs {
				res.samples[j.n] = send(context.Background(), client, base, j.id, j.body)
			}
		})
	}
	start := time.Now()
	interval := time.Second / time.Duration(rate)
	for n := range total {
		src := n
		if n%50 == 49 {
			src = n - 1
		}
		res.ids[n] = fmt.Sprintf("load-%06d", src)
		time.Sleep(time.Until(start.Add(time.Duration(n) * interval)))
		jobs <- job{n: n, id: res.ids[n], body: loadPayload(src)}
	}
	close(jobs)
	wg.Wait()
	res.elapsed = time.Since(start)
	return res
}

// check asserts that every unique delivery was accepted exactly once and
// every other copy answered as a duplicate, and returns how many unique
// deliveries there were.
func (r loadResult) check(tb testing.TB) int {
	accepted := map[string]int{}
	errs := 0
	for n, smp := range r.samples {
		switch {
		case smp.err == nil && smp.status == http.StatusAccepted:
			accepted[r.ids[n]]++
		case smp.err == nil && smp.status == http.StatusOK:
			accepted[r.ids[n]] += 0
		default:
			if errs++; errs <= 5 {
				tb.Errorf("delivery %d (%s): status %d, err %v", n, r.ids[n], smp.status, smp.err)
			}
		}
	}
	for id, c := range accepted {
		if c != 1 {
			tb.Errorf("delivery %s accepted %d times; want once", id, c)
		}
	}
	return len(accepted)
}

func (r loadResult) percentiles() (p50, p99, worst time.Duration) {
	acks := make([]time.Duration, 0, len(r.samples))
	for _, s := range r.samples {
		acks = append(acks, s.ack)
	}
	slices.Sort(acks)
	return pct(acks, 50), pct(acks, 99), acks[len(acks)-1]
}

// TestDurableInboxUnderLoad sends a short load to the real durable inbox
// (SQLite) and checks nothing was lost or doubled: each unique delivery is
// stored once and its job runs once. It asserts no latency; the figures are
// BenchmarkWebhookLoad's.
func TestDurableInboxUnderLoad(t *testing.T) {
	inbox, _, w := durableInbox(t, "sqlite", true)
	res := runLoad(t, inbox, 200, time.Second)
	unique := res.check(t)
	require.Eventually(t, func() bool { return w.n.Load() == int64(unique) }, 30*time.Second, 20*time.Millisecond,
		"every stored delivery's job runs: %d of %d", w.n.Load(), unique)
	time.Sleep(200 * time.Millisecond)
	assert.Equal(t, int64(unique), w.n.Load(), "and runs once")
}

// BenchmarkWebhookLoad measures the acknowledgement latency of signed
// deliveries over loopback at -load.rate per second for -load.duration,
// side by side: the in-memory path the service had before (answered before
// anything is stored), the durable write on SQLite (fsynced commits, WAL)
// and on PostgreSQL (synchronous commits), each with River working the
// delivery jobs meanwhile (-load.work=false: the durable write alone). The
// full figures:
//
//	go test ./server -run '^$' -bench BenchmarkWebhookLoad -benchtime 1x -load.duration 30s
func BenchmarkWebhookLoad(b *testing.B) {
	for _, name := range []string{"memory", "sqlite", "postgres"} {
		b.Run(name, func(b *testing.B) {
			var inbox server.Inbox
			var w *worked
			if name == "memory" {
				inbox = newMemoryInbox()
			} else {
				inbox, _, w = durableInbox(b, name, *loadWork)
				if !*loadWork {
					w = nil
				}
			}
			for b.Loop() {
				res := runLoad(b, inbox, *loadRate, *loadDuration)
				unique := res.check(b)
				if w != nil {
					deadline := time.Now().Add(60 * time.Second)
					for w.n.Load() < int64(unique) && time.Now().Before(deadline) {
						time.Sleep(20 * time.Millisecond)
					}
					if got := w.n.Load(); got != int64(unique) {
						b.Errorf("%d of %d stored deliveries' jobs ran", got, unique)
					}
				}
				p50, p99, worst := res.percentiles()
				b.ReportMetric(float64(p50.Microseconds())/1000, "p50-ms")
				b.ReportMetric(float64(p99.Microseconds())/1000, "p99-ms")
				b.ReportMetric(float64(worst.Microseconds())/1000, "max-ms")
				b.ReportMetric(float64(len(res.samples))/res.elapsed.Seconds(), "deliveries/s")
				b.Logf("%s: %d deliveries (%d unique) in %v: ack p50 %v, p99 %v, max %v", name, len(res.samples), unique,
					res.elapsed.Round(time.Millisecond), p50, p99, worst)
			}
		})
	}
}

func pct(sorted []time.Duration, p int) time.Duration {
	i := (len(sorted)*p + 99) / 100
	return sorted[max(0, min(i, len(sorted))-1)].Round(time.Microsecond)
}

func send(ctx context.Context, client *http.Client, base, id string, body []byte) sample {
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
		return sample{err: err}
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return sample{status: resp.StatusCode, ack: time.Since(begin)}
}
