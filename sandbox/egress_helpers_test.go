package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// mapResolver resolves test names from a fixed table; unknown names fail,
// so no test ever asks real DNS.
type mapResolver map[string][]netip.Addr

func (m mapResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if a, ok := m[host]; ok {
		return append([]netip.Addr(nil), a...), nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

var loopback4 = []netip.Addr{netip.MustParseAddr("127.0.0.1")}

// testUpstream is a loopback test server that records what reached it.
type testUpstream struct {
	*httptest.Server
	port int

	mu   sync.Mutex
	reqs []seenRequest
}

type seenRequest struct {
	Host   string
	Proto  int
	Header http.Header
	URL    string
}

func (u *testUpstream) seen() []seenRequest {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]seenRequest(nil), u.reqs...)
}

// newTestUpstream starts a server on 127.0.0.1 that records each request and
// then calls h (nil: echo the Authorization header in the body). With tlsCA
// non-nil it serves TLS (HTTP/2 offered) with certificates from tlsCA.
func newTestUpstream(t testing.TB, tlsCA *authority, h http.HandlerFunc) *testUpstream {
	t.Helper()
	u := &testUpstream{}
	if h == nil {
		h = func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("X-Echo-Auth", r.Header.Get("Authorization"))
			fmt.Fprintf(w, "proto=%d auth=%s", r.ProtoMajor, r.Header.Get("Authorization"))
		}
	}
	u.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.mu.Lock()
		u.reqs = append(u.reqs, seenRequest{Host: r.Host, Proto: r.ProtoMajor, Header: r.Header.Clone(), URL: r.URL.String()})
		u.mu.Unlock()
		h(w, r)
	}))
	if tlsCA != nil {
		u.EnableHTTP2 = true
		u.TLS = &tls.Config{GetCertificate: func(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
			name := hello.ServerName
			if name == "" {
				name = "127.0.0.1"
			}
			return tlsCA.leaf(name)
		}}
		u.StartTLS()
	} else {
		u.Start()
	}
	t.Cleanup(u.Close)
	_, p, _ := net.SplitHostPort(u.Listener.Addr().String())
	u.port, _ = strconv.Atoi(p)
	return u
}

// newTestAuthority returns a CA for upstream servers and a pool trusting it.
func newTestAuthority(t testing.TB) (*authority, *x509.CertPool) {
	t.Helper()
	ca, err := newAuthority(time.Now())
	require.NoError(t, err)
	pool := x509.NewCertPool()
	pool.AddCert(ca.cert)
	return ca, pool
}

// startEgress starts an Egress with cfg and stops it when the test ends.
func startEgress(t *testing.T, cfg EgressConfig) *Egress {
	t.Helper()
	if cfg.TempDir == "" {
		cfg.TempDir = sharedDir(t) // a root launcher's sandbox users must reach it
	}
	e, err := NewEgress(t.Context(), cfg)
	require.NoError(t, err)
	t.Cleanup(func() { e.Close() })
	return e
}

func (e *Egress) socket() string { return filepath.Join(e.dir, proxySocket) }

// proxyClient returns an HTTP client that uses e as its proxy (dialling the unix
// socket) and trusts e's CA, as a client inside the sandbox would.
func proxyClient(t testing.TB, e *Egress) *http.Client {
	t.Helper()
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(e.CACertPEM()))
	proxyURL, _ := url.Parse("http://127.0.0.1:3128")
	tr := &http.Transport{
		Proxy: http.ProxyURL(proxyURL),
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", e.socket())
		},
		TLSClientConfig:   &tls.Config{RootCAs: pool},
		ForceAttemptHTTP2: true,
	}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 20 * time.Second}
}

// rawConnect sends CONNECT hostport to e and returns the response and, when
// it is 200, the tunnel.
func rawConnect(t *testing.T, e *Egress, hostport string) (*http.Response, string, net.Conn) {
	t.Helper()
	c, err := net.Dial("unix", e.socket())
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(20 * time.Second))
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", hostport, hostport)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	require.NoError(t, err)
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		return resp, string(body), nil
	}
	require.Zero(t, br.Buffered(), "proxy sent bytes after the CONNECT reply")
	return resp, "", c
}

// roundTrip writes req on c (already a tunnel, TLS or not) and reads the reply.
func roundTrip(t *testing.T, c net.Conn, req *http.Request) (*http.Response, string) {
	t.Helper()
	require.NoError(t, req.Write(c))
	resp, err := http.ReadResponse(bufio.NewReader(c), req)
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, string(body)
}

// egressLogBuffer is a bytes.Buffer safe for a logger and a test to share.
type egressLogBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *egressLogBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *egressLogBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// acceptEach serves each connection l accepts with handle, in a goroutine
// of its own, closing it when handle returns; it returns once l is closed.
func acceptEach(l net.Listener, handle func(net.Conn)) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			handle(c)
		}()
	}
}
