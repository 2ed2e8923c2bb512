package sandbox

import (
	"compress/gzip"
	"compress/zlib"
	"crypto/tls"
	"encoding/base64"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/http2"
)

// keyStore is an upstream that remembers the Authorization it received (the
// real key, once the proxy swapped it in) and hands it back later, in every
// way an upstream can, to a request that carries no placeholder at all.
type keyStore struct {
	mu     sync.Mutex
	stored string
}

func (k *keyStore) handler(w http.ResponseWriter, r *http.Request) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if r.URL.Path == "/store" {
		k.stored = strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		if k.stored == "" {
			k.stored = r.Header.Get("X-Note")
		}
		fmt.Fprint(w, "stored")
		return
	}
	v := k.stored
	switch r.URL.Path {
	case "/read": // in a header, a header's name, the body and its encodings
		w.Header().Set("X-Stored", v)
		w.Header().Set("X-"+v, "1")
		fmt.Fprintf(w, "raw=%s b64=%s", v, base64.StdEncoding.EncodeToString([]byte(v)))
	case "/gzip": // compressed although nobody asked
		w.Header().Set("Content-Encoding", "gzip")
		zw := gzip.NewWriter(w)
		fmt.Fprintf(zw, "gz=%s", v)
		zw.Close()
	case "/gzip-second": // compressed, the encoding in a second header line
		w.Header()["Content-Encoding"] = []string{"identity", "gzip"}
		zw := gzip.NewWriter(w)
		fmt.Fprintf(zw, "gz2=%s", v)
		zw.Close()
	case "/deflate":
		w.Header().Set("Content-Encoding", "deflate")
		zw := zlib.NewWriter(w)
		fmt.Fprintf(zw, "zl=%s", v)
		zw.Close()
	case "/br": // an encoding the proxy cannot read
		w.Header().Set("Content-Encoding", "br")
		fmt.Fprint(w, "\x8b\x03\x80"+v+"\x03")
	case "/trailer":
		w.Header().Set("Trailer", "X-T")
		fmt.Fprint(w, "body;")
		w.(http.Flusher).Flush()
		w.Header().Set("X-T", v)
		w.Header().Set(http.TrailerPrefix+"X-"+v, "1")
	case "/early":
		w.Header().Set("Link", "</"+v+">; rel=preload")
		w.WriteHeader(http.StatusEarlyHints)
		w.Header().Del("Link")
		fmt.Fprint(w, "late")
	case "/range": // a slice of the key, as asked
		from, to := 0, len(v)
		fmt.Sscanf(r.Header.Get("Range"), "bytes=%d-%d", &from, &to)
		if to >= len(v) {
			to = len(v) - 1
		}
		fmt.Fprint(w, "part="+v[from:to+1])
	case "/redirect": // in a redirect's target, escaped as a query
		w.Header().Set("Location", "https://elsewhere.test/cb?k="+url.QueryEscape(v)+"&raw="+v)
		w.WriteHeader(http.StatusFound)
		fmt.Fprintf(w, "moved to %s", v)
	case "/error": // in an error body, as providers quote a bad key
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprintf(w, `{"error":{"message":"Incorrect API key provided: %s"}}`, v)
	case "/malformed-header", "/malformed-status": // a response the proxy cannot parse, whose error would quote it
		c, rw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer c.Close()
		if r.URL.Path == "/malformed-header" {
			fmt.Fprintf(rw, "HTTP/1.1 200 OK\r\nX%s\r\n\r\n", v)
		} else {
			fmt.Fprintf(rw, "HTTP/1.1 2%s OK\r\n\r\n", v)
		}
		rw.Flush()
	case "/ws-deflate": // an upgraded stream, compressed when the client offers to inflate it (or always)
		c, rw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer c.Close()
		if strings.Contains(r.Header.Get("Sec-WebSocket-Extensions"), "permessage-deflate") || r.URL.Query().Has("always") {
			fmt.Fprint(rw, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Extensions: permessage-deflate\r\n\r\n")
			zw := gzip.NewWriter(rw)
			fmt.Fprintf(zw, "ws=%s\n", v)
			zw.Close()
		} else {
			fmt.Fprintf(rw, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\nws=%s\n", v)
		}
		rw.Flush()
	case "/upgrade":
		if r.Header.Get("Upgrade") == "" {
			http.Error(w, "want an upgrade", http.StatusBadRequest)
			return
		}
		c, rw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer c.Close()
		fmt.Fprintf(rw, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: pb\r\nConnection: Upgrade\r\n\r\nws=%s\n", v)
		rw.Flush()
	}
}

// goAwayUpstream is an HTTP/2 server that answers every request with a
// GOAWAY frame whose debug data is the stored key, then hangs up: Go's
// transport quotes that debug data in the error it returns. It returns
// its port.
func goAwayUpstream(t *testing.T, ca *authority, store *keyStore) int {
	t.Helper()
	l, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{
		NextProtos:     []string{http2.NextProtoTLS},
		GetCertificate: func(h *tls.ClientHelloInfo) (*tls.Certificate, error) { return ca.leaf(h.ServerName) },
	})
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	go acceptEach(l, func(c net.Conn) {
		c.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.ReadFull(c, make([]byte, len(http2.ClientPreface))); err != nil {
			return
		}
		fr := http2.NewFramer(c, c)
		fr.WriteSettings()
		for {
			f, err := fr.ReadFrame()
			if err != nil {
				return
			}
			if h, ok := f.(*http2.HeadersFrame); ok {
				store.mu.Lock()
				v := store.stored
				store.mu.Unlock()
				fr.WriteGoAway(h.StreamID, http2.ErrCodeNo, []byte("stored="+v))
				return
			}
		}
	})
	return l.Addr().(*net.TCPAddr).Port
}

// TestEscapeProxy: the real key never reaches the sandbox from anything an
// upstream sends back, even a request with no placeholder in it (the
// upstream stored the key from an earlier one), in headers, their names,
// bodies, compressed bodies, trailers, 1xx responses or upgraded streams;
// the placeholder is swapped only into an authorization header; no secret
// crosses the network in plaintext; one sandbox cannot hold the launcher's
// descriptors; localhost is 127.0.0.1, never [::1].
func TestEscapeProxy(t *testing.T) {
	requireBwrapNet(t)
	eachLauncher(t, func(t *testing.T) {
		upCA, roots := newTestAuthority(t)
		store := &keyStore{}
		model := newTestUpstream(t, upCA, store.handler)
		plain := newTestUpstream(t, nil, store.handler)
		other := newTestUpstream(t, upCA, nil)
		files := newTestUpstream(t, upCA, store.handler) // another host of the run, not the key's, serving the same store
		goAway := goAwayUpstream(t, upCA, store)
		// Another service on the host's IPv6 loopback, on a port the
		// sandbox is given on 127.0.0.1 only.
		v6, err := net.Listen("tcp", "[::1]:0")
		require.NoError(t, err)
		defer v6.Close()
		var v6Conns atomic.Int64
		go func() {
			for {
				c, err := v6.Accept()
				if err != nil {
					return
				}
				v6Conns.Add(1)
				fmt.Fprint(c, "HTTP/1.1 200 OK\r\nContent-Length: 7\r\n\r\nipv6!!\n")
				c.Close()
			}
		}()
		v6Port := v6.Addr().(*net.TCPAddr).Port

		e := startEgress(t, EgressConfig{
			Allow: []AllowRule{
				{Host: "model.test", Ports: []int{model.port, plain.port, goAway}},
				{Host: "other.test", Ports: []int{other.port}},
				{Host: "files.test", Ports: []int{files.port}},
			},
			ForwardPorts:       []int{v6Port},
			Secrets:            []Secret{{Name: "MODEL_API_KEY", Value: egressRealKey, Hosts: []string{"model.test"}}},
			AllowLoopbackHosts: []string{"model.test", "other.test", "files.test"},
			Resolver: mapResolver{"model.test": loopback4, "other.test": loopback4, "files.test": loopback4,
				"localhost": {netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("::1")}}, // as /etc/hosts has it
			UpstreamRoots: roots,
		})
		sb := newNetSandbox(t, e, nil, "")
		mp, pp, op := strconv.Itoa(model.port), strconv.Itoa(plain.port), strconv.Itoa(other.port)
		m := "https://model.test:" + mp

		r := sb.run(t, `curl -sS -H "Authorization: Bearer $MODEL_API_KEY" `+m+`/store`)
		require.Equal(t, "stored", r.stdout, "control: the key is stored upstream: %s", r)
		require.Equal(t, egressRealKey, store.stored)

		var outputs []string
		attempts := []struct {
			name, script string
			check        func(t *testing.T, r netResult)
		}{
			{"read the stored key back in headers, names and body", `curl -sS -i ` + m + `/read`, nil},
			{"read it back compressed", `curl -sS -i ` + m + `/gzip | cat -v; curl -sS -i ` + m + `/deflate | cat -v`, nil},
			{"read it back compressed, the encoding named in a second header", `curl -sS -i --compressed ` + m + `/gzip-second | cat -v; echo; curl -sS -i --compressed --http1.1 ` + m + `/gzip-second | cat -v`, nil},
			{"read it back in an encoding the proxy cannot read", `curl -sS -i -w ' %{http_code}' ` + m + `/br | cat -v`,
				func(t *testing.T, r netResult) { assert.Contains(t, r.stdout, " 502", r) }},
			{"read it back in a trailer", `curl -sS -i --raw ` + m + `/trailer; curl -sS --http1.1 -i --raw ` + m + `/trailer`, nil},
			{"read it back in a 103 Early Hints", `curl -sS -i ` + m + `/early; curl -sS --http1.1 -i ` + m + `/early`, nil},
			{"read it back a slice at a time", `for i in 0 8 16 24 32; do curl -sS -H "Range: bytes=$i-$((i+7))" ` + m + `/range; echo; done`, nil},
			{"read it back in a redirect", `curl -sS -i ` + m + `/redirect`, nil},
			{"read it back in an error body", `curl -sS -i ` + m + `/error`, nil},
			{"read it back in the proxy's own error, from a response it cannot parse",
				`curl -sS -i http://model.test:` + pp + `/malformed-header; curl -sS -i http://model.test:` + pp + `/malformed-status`,
				func(t *testing.T, r netResult) { assert.Contains(t, r.stdout, "502 Bad Gateway", r) }},
			{"read it back in the proxy's own error, from an HTTP/2 GOAWAY's debug data", `curl -sS -i https://model.test:` + strconv.Itoa(goAway) + `/`,
				func(t *testing.T, r netResult) { assert.Contains(t, r.stdout, "502", r) }},
			{"read it back after a protocol upgrade", `curl -sS -i --http1.1 --max-time 5 -H 'Connection: Upgrade' -H 'Upgrade: pb' ` + m + `/upgrade`,
				func(t *testing.T, r netResult) { assert.NotContains(t, r.stdout, "101 Switching", r) }},
			{"read it back from another host over an upgraded stream it compresses when offered", `curl -sS --http1.1 -i --max-time 5 -H 'Connection: Upgrade' -H 'Upgrade: websocket' -H 'Sec-WebSocket-Extensions: permessage-deflate' https://files.test:` + strconv.Itoa(files.port) + `/ws-deflate -o /tmp/ws; at=$(LC_ALL=C grep -obUaP '\x1f\x8b' /tmp/ws | head -1 | cut -d: -f1); [ -n "$at" ] && tail -c +$((at+1)) /tmp/ws | gunzip -c 2>/dev/null; cat -v /tmp/ws`, nil},
			{"read it back from another host over an upgraded stream compressed unasked", `curl -sS --http1.1 -i --max-time 5 -H 'Connection: Upgrade' -H 'Upgrade: websocket' https://files.test:` + strconv.Itoa(files.port) + `/ws-deflate?always -o /tmp/ws; at=$(LC_ALL=C grep -obUaP '\x1f\x8b' /tmp/ws | head -1 | cut -d: -f1); [ -n "$at" ] && tail -c +$((at+1)) /tmp/ws | gunzip -c 2>/dev/null; cat -v /tmp/ws`,
				func(t *testing.T, r netResult) { assert.Contains(t, r.stdout, "502", r) }},
			{"the placeholder in a header the upstream stores", `curl -sS -w ' %{http_code}' -H "X-Note: $MODEL_API_KEY" ` + m + `/store`,
				func(t *testing.T, r netResult) { assert.Contains(t, r.stdout, " 403", r) }},
			{"the placeholder in an authorization with more around it", `curl -sS -w ' %{http_code}' -H "Authorization: Bearer x$MODEL_API_KEY" ` + m + `/store`,
				func(t *testing.T, r netResult) { assert.Contains(t, r.stdout, " 403", r) }},
			{"the placeholder as a header's name to another host", `curl -sS -w ' %{http_code}' -H "$MODEL_API_KEY: 1" https://other.test:` + op + `/`,
				func(t *testing.T, r netResult) { assert.Contains(t, r.stdout, " 403", r) }},
			{"CONNECT to the key's host, then plaintext", `curl -sS -w ' %{http_code}' --proxytunnel -H "Authorization: Bearer $MODEL_API_KEY" http://model.test:` + pp + `/store`,
				func(t *testing.T, r netResult) { assert.Contains(t, r.stdout, " 403", r) }},
			{"CONNECT to the key's host, then cleartext HTTP/2", `curl -sS -w ' %{http_code}' --proxytunnel --http2-prior-knowledge -H "Authorization: Bearer $MODEL_API_KEY" http://model.test:` + pp + `/store`,
				func(t *testing.T, r netResult) { assert.NotContains(t, r.stdout, "stored", r) }},
			{"plain http to the key's host", `curl -sS -w ' %{http_code}' -H "Authorization: Bearer $MODEL_API_KEY" http://model.test:` + pp + `/store`,
				func(t *testing.T, r netResult) { assert.Contains(t, r.stdout, " 403", r) }},
			{"localhost through the proxy reaching [::1]", `p=` + strconv.Itoa(v6Port) + `
				for h in localhost localhost. LocalHost '[::1]' '[0:0:0:0:0:0:0:1]' '[::ffff:127.0.0.1]' ip6-localhost ip6-loopback; do
					curl -sS --max-time 5 --noproxy '' -x http://127.0.0.1:3128 "http://$h:$p/"; echo
				done
				curl -sS --max-time 5 --noproxy '*' "http://localhost:$p/" "http://[::1]:$p/"; true`,
				func(t *testing.T, r netResult) { assert.NotContains(t, r.stdout, "ipv6", r) }},
		}
		for _, a := range attempts {
			t.Run(a.name, func(t *testing.T) {
				r := sb.run(t, a.script)
				outputs = append(outputs, r.stdout, r.stderr)
				assert.NotContains(t, r.stdout+r.stderr, egressRealKey, "the real key reached the sandbox: %s", r)
				for i := 0; i+8 <= len(egressRealKey); i += 8 {
					assert.NotContains(t, r.stdout, "part="+egressRealKey[i:i+8], "a slice of the key reached the sandbox")
				}
				if a.check != nil {
					a.check(t, r)
				}
			})
		}
		assert.Equal(t, egressRealKey, store.stored, "no placeholder was stored in the key's place")
		assert.Zero(t, v6Conns.Load(), "the proxy reached another service on [::1]")
		assert.Len(t, other.seen(), 0, "a request with the placeholder reached other.test")
		for _, req := range plain.seen() {
			assert.NotContains(t, fmt.Sprint(req.Header), egressRealKey, "the real key crossed in plaintext to %s", req.URL)
		}
		for _, out := range outputs {
			assert.NotContains(t, out, egressRealKey)
		}
	})
}

// openDescriptors counts this process's open descriptors.
func openDescriptors(t *testing.T) int {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	return len(entries)
}

// floodLoopback has sb open up to 300 connections to its loopback port and
// hold them for hold; it returns once they are open (and half a second
// more, for the launcher to accept them), with the channel that gives sb's
// result when it ends.
func floodLoopback(t *testing.T, sb *netSandbox, port int, hold time.Duration) <-chan netResult {
	t.Helper()
	done := make(chan netResult, 1)
	go func() {
		done <- sb.run(t, fmt.Sprintf(`for i in $(seq 300); do exec {fd}<>/dev/tcp/127.0.0.1/%d || break; done; echo $i > /tmp/opened; sleep %d`,
			port, int(hold.Seconds())))
	}()
	require.Eventually(t, func() bool {
		_, err := os.Stat(filepath.Join(sb.sb.Home(), "opened"))
		return err == nil
	}, 40*time.Second, 50*time.Millisecond, "the flood is in place")
	time.Sleep(500 * time.Millisecond) // what the launcher accepts, it has accepted by now
	return done
}

// TestEscapeProxyConnectionFlood: one sandbox opening hundreds of idle
// connections to its proxy holds at most a bounded number of the
// launcher's descriptors, and another sandbox's proxy keeps serving.
func TestEscapeProxyConnectionFlood(t *testing.T) {
	requireBwrapNet(t)
	eachLauncher(t, func(t *testing.T) {
		upCA, roots := newTestAuthority(t)
		model := newTestUpstream(t, upCA, nil)
		cfg := EgressConfig{
			Allow:              []AllowRule{{Host: "model.test", Ports: []int{model.port}}},
			AllowLoopbackHosts: []string{"model.test"},
			Resolver:           mapResolver{"model.test": loopback4},
			UpstreamRoots:      roots,
		}
		flooder := newNetSandbox(t, startEgress(t, cfg), nil, "")
		other := newNetSandbox(t, startEgress(t, cfg), nil, "")
		before := openDescriptors(t)
		done := floodLoopback(t, flooder, 3128, 15*time.Second)
		held := openDescriptors(t) - before
		r := other.run(t, `curl -sS --max-time 30 https://model.test:`+strconv.Itoa(model.port)+`/`)
		assert.Equal(t, 0, r.code, "another sandbox's proxy stopped serving: %s", r)
		assert.LessOrEqual(t, held, DefaultMaxConns+16, "one sandbox holds %d of the launcher's descriptors", held)
		<-done
	})
}

// countingWriter counts the bytes and lines written to it, and the
// longest line, keeping only the last write when it is short.
type countingWriter struct {
	mu                   sync.Mutex
	bytes, lines, widest int
	line                 int
	last                 string // the last line, when short
}

func (w *countingWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.bytes += len(p)
	if len(p) < 1024 {
		w.last = string(p)
	}
	for _, b := range p {
		w.line++
		if b == '\n' {
			w.lines++
			w.widest = max(w.widest, w.line)
			w.line = 0
		}
	}
	return len(p), nil
}

// TestEscapeEgressLogFlood: every refusal made a Warn line in the
// launcher's log (a runner's stderr, a service's journal) quoting what the
// sandbox named, so a sandbox refused as fast as the proxy answers filled
// it without bound: a CONNECT naming a 256 KiB host wrote it twice over,
// escaped, and a thousand refusals a thousand lines. The log now quotes at
// most refusalLogMax bytes of what the sandbox sent, and lines refusals one
// by one only up to refusalLogBurst, then says how many more there were.
func TestEscapeEgressLogFlood(t *testing.T) {
	requireBwrapNet(t)
	eachLauncher(t, func(t *testing.T) {
		log := &countingWriter{}
		e := startEgress(t, EgressConfig{
			Allow:    []AllowRule{{Host: "model.test"}},
			Resolver: mapResolver{"model.test": loopback4},
			Logger:   slog.New(slog.NewTextHandler(log, nil)),
		})
		sb := newNetSandbox(t, e, nil, "")
		r := sb.run(t, `big=$(head -c 262144 /dev/zero | tr '\0' a)
			for i in $(seq 20); do
				exec 3<>/dev/tcp/127.0.0.1/3128 || exit 1
				printf 'CONNECT %s.test:443 HTTP/1.1\r\nHost: %s.test:443\r\n\r\n' "$big" "$big" >&3
				read -r status <&3; echo "$status"
				exec 3>&-
			done | sort | uniq -c
			curl -sS -o /dev/null -w '%{http_code}\n' --max-time 60 "http://denied[1-1000].test/" | sort | uniq -c`)
		require.Equal(t, 0, r.code, r)
		assert.Contains(t, r.stdout, "20 HTTP/1.1 403", r)
		assert.Contains(t, r.stdout, "1000 403", r)
		require.NoError(t, e.Close()) // which sums up the refusals not logged one by one
		log.mu.Lock()
		defer log.mu.Unlock()
		t.Logf("1,020 refusals: %d bytes of log in %d lines, the widest %d bytes", log.bytes, log.lines, log.widest)
		assert.Positive(t, log.lines, "refusals are still logged")
		assert.LessOrEqual(t, log.widest, 4*refusalLogMax+512, "a log line quotes what the sandbox sent at length")
		assert.LessOrEqual(t, log.lines, refusalLogBurst+10, "every refusal made a line of the launcher's log")
		assert.Contains(t, log.last, "total=1020", "the log says how many refusals there were")
	})
}
