package sandbox

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// target is the destination a request is bound for, as the sandbox named it.
type target struct {
	host   string // normalised host name or IP literal
	port   int
	scheme string // upstream scheme: "https" for TLS tunnels, else "http"
}

func (t target) String() string { return net.JoinHostPort(t.host, strconv.Itoa(t.port)) }

type targetKey struct{}

// tunnelConn is the sandbox's side of a CONNECT tunnel after the 200: its
// first bytes were peeked into r.
type tunnelConn struct {
	net.Conn
	r      *bufio.Reader
	target target
}

func (c *tunnelConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// tunnelContext records the tunnel's CONNECT target in every request's context.
func tunnelContext(ctx context.Context, c net.Conn) context.Context {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	if tc, ok := c.(*tunnelConn); ok {
		return context.WithValue(ctx, targetKey{}, tc.target)
	}
	return ctx
}

// connListener hands hijacked tunnel connections to an http.Server.
type connListener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func newConnListener() *connListener {
	return &connListener{conns: make(chan net.Conn), done: make(chan struct{})}
}

func (l *connListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *connListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *connListener) Addr() net.Addr { return &net.UnixAddr{Name: "egress-tunnel", Net: "unix"} }

// push hands c to the server, or closes it when the listener is closed.
func (l *connListener) push(c net.Conn) {
	select {
	case l.conns <- c:
	case <-l.done:
		c.Close()
	}
}

// serveProxy is the proxy's front door: CONNECT, or an absolute-form http request.
func (e *Egress) serveProxy(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodConnect {
		e.serveConnect(w, r)
		return
	}
	if r.URL.Host == "" {
		http.Error(w, "pairbench egress: this is a proxy; send CONNECT or absolute-form requests", http.StatusBadRequest)
		return
	}
	if r.URL.Scheme != "http" {
		e.deny(w, r, &DeniedError{Host: r.URL.Hostname(), Reason: "only http:// URLs may be proxied in absolute form; use CONNECT for https"})
		return
	}
	host, port, err := splitHostPort(r.URL.Host, 80)
	if err != nil {
		http.Error(w, "pairbench egress: "+err.Error(), http.StatusBadRequest)
		return
	}
	t := target{host: host, port: port, scheme: "http"}
	if err := e.pol.check(host, port); err != nil {
		e.deny(w, r, err)
		return
	}
	e.forwardRequest(w, r, t)
}

// serveConnect checks the CONNECT target, resolves it (refusing non-public
// answers), answers 200 and hands the tunnel to the TLS-terminating or the
// plaintext server depending on its first byte.
func (e *Egress) serveConnect(w http.ResponseWriter, r *http.Request) {
	host, port, err := splitHostPort(r.Host, 0)
	if err != nil {
		http.Error(w, "pairbench egress: CONNECT needs host:port: "+err.Error(), http.StatusBadRequest)
		return
	}
	if e.web {
		e.relayTunnel(w, r, host, port)
		return
	}
	if _, err := e.pol.resolve(r.Context(), host, port); err != nil {
		e.deny(w, r, err)
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		http.Error(w, "pairbench egress: cannot tunnel", http.StatusInternalServerError)
		return
	}
	conn, rw, err := hj.Hijack()
	if err != nil {
		return
	}
	// Until a tunnel server owns it, Close must be able to end the conn.
	if !e.track(conn) {
		conn.Close()
		return
	}
	if _, err := io.WriteString(conn, "HTTP/1.1 200 Connection Established\r\n\r\n"); err != nil {
		e.untrack(conn)
		return
	}
	conn.SetReadDeadline(time.Now().Add(time.Minute))
	first, err := rw.Reader.Peek(1)
	if err != nil {
		e.untrack(conn)
		return
	}
	conn.SetReadDeadline(time.Time{})
	e.release(conn)
	tc := &tunnelConn{Conn: conn, r: rw.Reader, target: target{host: host, port: port, scheme: "http"}}
	if first[0] == 0x16 { // TLS handshake record
		tc.target.scheme = "https"
		e.tlsL.push(tc)
		return
	}
	e.plainL.push(tc)
}

// certificateFor mints the certificate the sandbox sees for a terminated
// tunnel, refusing a ClientHello whose SNI differs from the CONNECT target.
func (e *Egress) certificateFor(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
	tc, ok := hello.Conn.(*tunnelConn)
	if !ok || e.ca == nil {
		return nil, errors.New("egress: TLS connection without a CONNECT target")
	}
	sni := normalizeHost(hello.ServerName)
	switch {
	case sni == "" && !isIPLiteral(tc.target.host):
		e.log.Warn("egress denied", "host", tc.target.host, "reason", "TLS ClientHello without SNI")
		return nil, fmt.Errorf("egress: no SNI for CONNECT target %s", tc.target.host)
	case sni != "" && sni != tc.target.host:
		e.log.Warn("egress denied", "host", tc.target.host, "sni", sni, "reason", "SNI does not match the CONNECT target")
		return nil, fmt.Errorf("egress: SNI %q does not match CONNECT target %q", sni, tc.target.host)
	}
	return e.ca.leaf(tc.target.host)
}

// serveTunneled handles one request inside a CONNECT tunnel: its Host must
// name the CONNECT target.
func (e *Egress) serveTunneled(w http.ResponseWriter, r *http.Request) {
	t, ok := r.Context().Value(targetKey{}).(target)
	if !ok {
		http.Error(w, "pairbench egress: no tunnel target", http.StatusInternalServerError)
		return
	}
	def := 80
	if t.scheme == "https" {
		def = 443
	}
	host, port, err := splitHostPort(r.Host, def)
	if err != nil || host != t.host || port != t.port {
		e.deny(w, r, &DeniedError{Host: t.host, Port: t.port, Reason: fmt.Sprintf("Host %q does not match the CONNECT target", r.Host)})
		return
	}
	e.forwardRequest(w, r, t)
}

type swapKey struct{}

// forwardRequest applies the placeholder rules to r and proxies it to t.
func (e *Egress) forwardRequest(w http.ResponseWriter, r *http.Request, t target) {
	swapped, err := e.checkPlaceholders(r, t)
	if err != nil {
		e.deny(w, r, err)
		return
	}
	out := r.Clone(context.WithValue(r.Context(), targetKey{}, t))
	for _, s := range swapped {
		for name, vals := range out.Header {
			for i, v := range vals {
				out.Header[name][i] = strings.ReplaceAll(v, s.token, s.Value)
			}
		}
	}
	if len(swapped) > 0 {
		// Let the transport negotiate and undo compression so the response
		// body can be scrubbed of the real values.
		out.Header.Del("Accept-Encoding")
		out = out.WithContext(context.WithValue(out.Context(), swapKey{}, swapped))
	}
	e.log.Debug("egress allowed", "method", r.Method, "target", t.String(), "swapped", len(swapped))
	e.proxy.ServeHTTP(w, out)
}

// checkPlaceholders returns the secrets whose placeholders r carries in its
// headers and may be swapped for t, or a DeniedError when a placeholder
// appears in the URL or in a request to a host its secret is not scoped to.
func (e *Egress) checkPlaceholders(r *http.Request, t target) ([]placeholder, error) {
	var swapped []placeholder
	inURL := r.RequestURI + " " + r.URL.Path + " " + r.URL.RawQuery
	if q, err := url.QueryUnescape(r.URL.RawQuery); err == nil {
		inURL += " " + q
	}
	for _, s := range e.secrets {
		if strings.Contains(inURL, s.token) {
			return nil, &DeniedError{Host: t.host, Port: t.port, Reason: fmt.Sprintf("the placeholder for %s appears in the URL; placeholders are swapped in headers only", s.Name)}
		}
		if !headersContain(r.Header, s.token) {
			continue
		}
		if !s.scopedTo(t.host) {
			return nil, &DeniedError{Host: t.host, Port: t.port, Reason: fmt.Sprintf("the placeholder for %s may only be sent to %s", s.Name, strings.Join(s.Hosts, ", "))}
		}
		swapped = append(swapped, s)
	}
	return swapped, nil
}

func (s placeholder) scopedTo(host string) bool {
	for _, h := range s.Hosts {
		if matchesHost(normalizeHost(h), host) {
			return true
		}
	}
	return false
}

func headersContain(h http.Header, token string) bool {
	for name, vals := range h {
		if strings.Contains(name, token) {
			return true
		}
		for _, v := range vals {
			if strings.Contains(v, token) {
				return true
			}
		}
	}
	return false
}

// newReverseProxy returns the proxy that forwards a request whose context
// holds its target, over the shared upstream transport.
func (e *Egress) newReverseProxy() *httputil.ReverseProxy {
	return &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			t := pr.In.Context().Value(targetKey{}).(target)
			pr.Out.URL.Scheme = t.scheme
			pr.Out.URL.Host = t.String()
			pr.Out.Host = pr.In.Host
		},
		Transport:      upstreamTransport{e.transport, e.upgradeTransport},
		FlushInterval:  -1, // stream: flush after every write (SSE)
		ModifyResponse: scrubResponse,
		ErrorHandler:   e.upstreamError,
	}
}

// upstreamTransport sends protocol upgrades over HTTP/1.1 and everything
// else over the HTTP/2-capable transport.
type upstreamTransport struct{ h2, h1 *http.Transport }

func (u upstreamTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Header.Get("Upgrade") != "" {
		return u.h1.RoundTrip(r)
	}
	return u.h2.RoundTrip(r)
}

// scrubResponse replaces any real secret value the upstream echoes back (in
// headers or body) with its placeholder, for requests that carried one.
func scrubResponse(resp *http.Response) error {
	swapped, _ := resp.Request.Context().Value(swapKey{}).([]placeholder)
	if len(swapped) == 0 {
		return nil
	}
	for _, s := range swapped {
		for name, vals := range resp.Header {
			for i, v := range vals {
				resp.Header[name][i] = strings.ReplaceAll(v, s.Value, s.token)
			}
		}
		if resp.StatusCode != http.StatusSwitchingProtocols { // an upgraded stream stays as is
			resp.Body = &scrubReader{src: resp.Body, secret: s.Value, token: s.token}
		}
	}
	if resp.StatusCode != http.StatusSwitchingProtocols && resp.ContentLength >= 0 {
		resp.ContentLength = -1
		resp.Header.Del("Content-Length")
	}
	return nil
}

// scrubReader replaces secret with token in a stream. It holds back only a
// tail that could still become the secret, so streamed events pass at once.
type scrubReader struct {
	src           io.ReadCloser
	secret, token string
	buf           []byte // read buffer
	pending       []byte // read from src, not yet scrubbed and returned
	out           []byte // scrubbed, ready to return
	eof           bool
}

func (s *scrubReader) Read(p []byte) (int, error) {
	for len(s.out) == 0 {
		if s.eof {
			if len(s.pending) > 0 {
				s.out, s.pending = s.pending, nil
				break
			}
			return 0, io.EOF
		}
		if s.buf == nil {
			s.buf = make([]byte, 32*1024)
		}
		n, err := s.src.Read(s.buf)
		s.pending = append(s.pending, s.buf[:n]...)
		if err == io.EOF {
			s.eof = true
		} else if err != nil {
			return 0, err
		}
		text := strings.ReplaceAll(string(s.pending), s.secret, s.token)
		keep := 0
		if !s.eof {
			keep = heldBack(text, s.secret)
		}
		s.out = append(s.out, text[:len(text)-keep]...)
		s.pending = append(s.pending[:0], text[len(text)-keep:]...)
	}
	n := copy(p, s.out)
	s.out = s.out[n:]
	return n, nil
}

func (s *scrubReader) Close() error { return s.src.Close() }

// heldBack returns the length of the longest suffix of text that is a proper
// prefix of secret.
func heldBack(text, secret string) int {
	for k := min(len(text), len(secret)-1); k > 0; k-- {
		if strings.HasSuffix(text, secret[:k]) {
			return k
		}
	}
	return 0
}

// upstreamError answers 403 for policy refusals found at dial time (a name
// that resolved to a private address) and 502 for everything else.
func (e *Egress) upstreamError(w http.ResponseWriter, r *http.Request, err error) {
	var denied *DeniedError
	if errors.As(err, &denied) {
		e.deny(w, r, denied)
		return
	}
	if errors.Is(err, context.Canceled) {
		return
	}
	t, _ := r.Context().Value(targetKey{}).(target)
	e.log.Warn("egress upstream failed", "target", t.String(), "err", err)
	http.Error(w, fmt.Sprintf("pairbench egress: upstream %s failed: %v", t, err), http.StatusBadGateway)
}

// deny answers 403 with a body naming the host and the reason.
func (e *Egress) deny(w http.ResponseWriter, r *http.Request, err error) {
	var denied *DeniedError
	if !errors.As(err, &denied) {
		e.log.Warn("egress failed", "method", r.Method, "host", r.Host, "err", err)
		http.Error(w, "pairbench egress: "+err.Error(), http.StatusBadGateway)
		return
	}
	e.log.Warn("egress denied", "method", r.Method, "host", denied.Host, "port", denied.Port, "reason", denied.Reason)
	if e.onDeny != nil {
		e.onDeny(denied)
	}
	http.Error(w, fmt.Sprintf("pairbench egress: request to %q denied: %s", denied.Host, denied.Reason), http.StatusForbidden)
}
