package sandbox

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pairbench/pairbench/internal/sandboxinit"
)

// BenchmarkProxyHTTPS measures what the egress proxy adds to one HTTPS
// request (through the init relay, TLS terminated, placeholder swapped,
// HTTP/2 upstream) against the
// same request sent directly to the same loopback server. Both clients keep
// their connections alive; each iteration sends one request each way, so the
// two are measured side by side in one run. The target is a median
// overhead of at most 2 ms.
//
//	go test -run '^$' -bench BenchmarkProxyHTTPS -benchtime 2000x ./sandbox
func BenchmarkProxyHTTPS(b *testing.B) {
	upCA, roots := newTestAuthority(b)
	body := []byte(`{"id":"chatcmpl-1","choices":[{"message":{"content":"ok"}}]}`)
	up := newTestUpstream(b, upCA, func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+egressRealKey {
			http.Error(w, "bad key", http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(body)
	})
	e, err := NewEgress(b.Context(), EgressConfig{
		TempDir:            sharedDir(b),
		Allow:              []AllowRule{{Host: "model.test", Ports: []int{up.port}}},
		Secrets:            []Secret{{Name: "MODEL_API_KEY", Value: egressRealKey, Hosts: []string{"model.test"}}},
		AllowLoopbackHosts: []string{"model.test"},
		Resolver:           mapResolver{"model.test": loopback4},
		UpstreamRoots:      roots,
	})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	ph, _ := e.Placeholder("MODEL_API_KEY")

	// The sandbox's side: the init relay (TCP on loopback → unix socket) in
	// front of the proxy, as RunInit runs it.
	relay, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer relay.Close()
	go sandboxinit.AcceptRelays(relay, sandboxinit.DialUnix(e.socket()))
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(e.CACertPEM())
	proxied := &http.Client{Transport: &http.Transport{
		Proxy:             http.ProxyURL(&url.URL{Scheme: "http", Host: relay.Addr().String()}),
		TLSClientConfig:   &tls.Config{RootCAs: pool},
		ForceAttemptHTTP2: true,
	}}
	defer proxied.CloseIdleConnections()
	direct := &http.Client{Transport: &http.Transport{
		TLSClientConfig:   &tls.Config{RootCAs: roots, ServerName: "model.test"},
		ForceAttemptHTTP2: true,
	}}
	defer direct.CloseIdleConnections()
	directURL := "https://127.0.0.1:" + strconv.Itoa(up.port) + "/v1/chat/completions"
	proxyURL := "https://model.test:" + strconv.Itoa(up.port) + "/v1/chat/completions"

	get := func(c *http.Client, url, key string) time.Duration {
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		req.Header.Set("Authorization", "Bearer "+key)
		start := time.Now()
		resp, err := c.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		d := time.Since(start)
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("GET %s: %s", url, resp.Status)
		}
		return d
	}
	for range 20 { // open and warm both connections
		get(direct, directURL, egressRealKey)
		get(proxied, proxyURL, ph)
	}

	var dd, pd, over []float64
	for b.Loop() {
		d := get(direct, directURL, egressRealKey)
		p := get(proxied, proxyURL, ph)
		dd = append(dd, millis(d))
		pd = append(pd, millis(p))
		over = append(over, millis(p-d))
	}
	b.ReportMetric(egressMedian(dd), "direct-median-ms")
	b.ReportMetric(egressMedian(pd), "proxy-median-ms")
	b.ReportMetric(egressMedian(over), "overhead-median-ms")
}

func millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func egressMedian(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// BenchmarkNewEgress measures getting the egress ready for one sandbox (CA
// and bundle written, sockets listening) and closing it again: part of the
// launch overhead the issue bounds at 20 ms.
//
//	go test -run '^$' -bench BenchmarkNewEgress ./sandbox
func BenchmarkNewEgress(b *testing.B) {
	cfg := EgressConfig{
		TempDir:      sharedDir(b),
		Allow:        []AllowRule{{Host: "api.example.com"}, {Host: "*.example.org"}},
		ForwardPorts: []int{9222},
		Secrets:      []Secret{{Name: "MODEL_API_KEY", Value: egressRealKey, Hosts: []string{"api.example.com"}}},
	}
	for b.Loop() {
		e, err := NewEgress(b.Context(), cfg)
		if err != nil {
			b.Fatal(err)
		}
		e.Close()
	}
}

// BenchmarkScrubStream scrubs a 1 MiB stream of model events (JSON lines,
// a break every 100 bytes or so) for one secret, as the proxy does every
// response body, read 32 KiB at a time.
//
//	go test -run '^$' -bench BenchmarkScrubStream -count 5 ./sandbox
func BenchmarkScrubStream(b *testing.B) {
	sc := newScrubber([]placeholder{{Secret: Secret{Value: egressRealKey}, token: "PH"}})
	var body strings.Builder
	for i := 0; body.Len() < 1<<20; i++ {
		fmt.Fprintf(&body, "data: {\"id\":\"chatcmpl-1\",\"choices\":[{\"delta\":{\"content\":\"token %d of the answer\"}}]}\n\n", i)
	}
	src := body.String()
	b.SetBytes(int64(len(src)))
	for b.Loop() {
		n, err := io.Copy(io.Discard, sc.reader(io.NopCloser(strings.NewReader(src)), nil))
		if err != nil || n < int64(len(src))/2 {
			b.Fatal(n, err)
		}
	}
}
