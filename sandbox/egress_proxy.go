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
	"net/netip"
	"net/url"
	"regexp"
	"slices"
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
		if e.refusals.Count() {
			e.log.Warn("egress denied", "host", tc.target.host, "reason", "TLS ClientHello without SNI")
		}
		return nil, fmt.Errorf("egress: no SNI for CONNECT target %s", tc.target.host)
	case sni != "" && sni != tc.target.host:
		if e.refusals.Count() {
			e.log.Warn("egress denied", "host", tc.target.host, "sni", ClipForLog(sni), "reason", "SNI does not match the CONNECT target")
		}
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

// authHeaders are where a placeholder is swapped unless its Secret says:
// the headers providers read their keys from (Authorization for OpenAI,
// OpenRouter and most; x-api-key for Anthropic; api-key for Azure;
// x-goog-api-key for Google).
var authHeaders = []string{"Authorization", "X-Api-Key", "Api-Key", "X-Goog-Api-Key"}

// authScheme is the one word that may precede a placeholder in its header
// ("Bearer", "Token"): the value is the placeholder alone or that word, a
// space and the placeholder, nothing more.
var authScheme = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z][A-Za-z0-9._~+/-]* $`) })

// forwardRequest applies the placeholder rules to r and proxies it to t.
func (e *Egress) forwardRequest(w http.ResponseWriter, r *http.Request, t target) {
	swapped, err := e.checkPlaceholders(r, t)
	if err != nil {
		e.deny(w, r, err)
		return
	}
	if e.scrub != nil && isUpgrade(r) && e.holdsSecretFor(t.host) {
		e.deny(w, r, &DeniedError{Host: t.host, Port: t.port, Reason: "protocol upgrades to a host a secret is scoped to are refused: what comes back over them cannot be searched for the secret"})
		return
	}
	if !e.slot(r.Context()) {
		return
	}
	defer e.freeSlot()
	out := r.Clone(context.WithValue(r.Context(), targetKey{}, t))
	for _, s := range swapped {
		for _, name := range s.headers() {
			for i, v := range out.Header[name] {
				out.Header[name][i] = strings.ReplaceAll(v, s.token, s.Value)
			}
		}
	}
	out.Trailer = nil // never inspected, so never sent
	if e.scrub != nil {
		// What comes back must be searchable: uncompressed (the transport
		// asks for gzip and undoes it; scrubResponse handles the rest) and
		// whole (a Range could fetch a stored key a slice at a time).
		out.Header.Del("Accept-Encoding")
		out.Header.Del("Range")
		out.Header.Del("If-Range")
		// Nor may an upgraded stream be compressed (websockets'
		// permessage-deflate): it is scrubbed byte for byte.
		out.Header.Del("Sec-WebSocket-Extensions")
	}
	e.log.Debug("egress allowed", "method", r.Method, "target", t.String(), "swapped", len(swapped))
	e.proxy.ServeHTTP(noInterim{w}, out)
}

// isUpgrade reports whether r asks to switch protocols (websockets).
func isUpgrade(r *http.Request) bool {
	return r.Header.Get("Upgrade") != "" || strings.Contains(strings.ToLower(r.Header.Get("Connection")), "upgrade")
}

// holdsSecretFor reports whether any secret is scoped to host.
func (e *Egress) holdsSecretFor(host string) bool {
	for _, s := range e.secrets {
		if s.scopedTo(host) {
			return true
		}
	}
	return false
}

// checkPlaceholders returns the secrets whose placeholders r carries and may
// be swapped for t, or a DeniedError when a placeholder appears anywhere it
// may not: in the URL, in a header's name, in a header other than its
// secret's authorization headers, with more around it than one scheme word,
// in a request to a host its secret is not scoped to, or in a request that
// would cross the network in plaintext (only TLS, or this host's own
// loopback named by address, carry a real secret). Placeholders are
// compared without regard to case, so a changed case does not slip one
// past.
func (e *Egress) checkPlaceholders(r *http.Request, t target) ([]placeholder, error) {
	var swapped []placeholder
	inURL := strings.ToLower(r.RequestURI + " " + r.URL.Path + " " + r.URL.RawQuery)
	if q, err := url.QueryUnescape(r.URL.RawQuery); err == nil {
		inURL += " " + strings.ToLower(q)
	}
	deny := func(s placeholder, why string) error {
		return &DeniedError{Host: t.host, Port: t.port, Reason: fmt.Sprintf("the placeholder for %s %s", s.Name, why)}
	}
	for _, s := range e.secrets {
		tok := strings.ToLower(s.token)
		if strings.Contains(inURL, tok) {
			return nil, deny(s, "appears in the URL; placeholders are swapped in headers only")
		}
		carried := false
		for name, vals := range r.Header {
			if strings.Contains(strings.ToLower(name), tok) {
				return nil, deny(s, "is a header's name")
			}
			for _, v := range vals {
				if !strings.Contains(strings.ToLower(v), tok) {
					continue
				}
				if !slices.Contains(s.headers(), name) {
					return nil, deny(s, fmt.Sprintf("appears in %s; it is swapped only in %s", name, strings.Join(s.headers(), ", ")))
				}
				if rest, ok := strings.CutSuffix(v, s.token); !ok || (rest != "" && !authScheme().MatchString(rest)) {
					return nil, deny(s, fmt.Sprintf("in %s must be the whole value, or follow one scheme word (Bearer)", name))
				}
				carried = true
			}
		}
		if !carried {
			continue
		}
		if !s.scopedTo(t.host) {
			return nil, deny(s, "may only be sent to "+strings.Join(s.Hosts, ", "))
		}
		if t.scheme != "https" && !isLoopbackLiteral(t.host) {
			return nil, deny(s, "is swapped only into TLS connections (or to this host's loopback by address); this request would cross the network in plaintext")
		}
		swapped = append(swapped, s)
	}
	return swapped, nil
}

// isLoopbackLiteral reports whether host is a loopback address written as
// one (never a name, which DNS could answer otherwise).
func isLoopbackLiteral(host string) bool {
	a, err := netip.ParseAddr(host)
	return err == nil && a.Unmap().IsLoopback()
}

func (s placeholder) scopedTo(host string) bool {
	for _, h := range s.Hosts {
		if matchesHost(normalizeHost(h), host) {
			return true
		}
	}
	return false
}

// headers are the request headers s's placeholder is swapped in
// (canonical names).
func (s placeholder) headers() []string {
	if len(s.Headers) == 0 {
		return authHeaders
	}
	out := make([]string, len(s.Headers))
	for i, h := range s.Headers {
		out[i] = http.CanonicalHeaderKey(h)
	}
	return out
}

// newReverseProxy returns the proxy that forwards a request whose context
// holds its target, over the shared upstream transport.
func (e *Egress) newReverseProxy() *httputil.ReverseProxy {
	var transport http.RoundTripper = upstreamTransport{e.transport, e.upgradeTransport}
	if e.upstream != nil {
		transport = e.upstream(transport)
	}
	return &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			t := pr.In.Context().Value(targetKey{}).(target)
			pr.Out.URL.Scheme = t.scheme
			pr.Out.URL.Host = t.String()
			pr.Out.Host = pr.In.Host
		},
		Transport:      transport,
		FlushInterval:  -1, // stream: flush after every write (SSE)
		ModifyResponse: e.scrubResponse,
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
	// The error may quote what the upstream sent (a response net/http could
	// not parse is quoted whole): scrubbed like everything else that comes back.
	msg := e.scrubText(err.Error())
	if e.refusals.Count() {
		e.log.Warn("egress upstream failed", "target", t.String(), "err", ClipForLog(msg))
	}
	http.Error(w, fmt.Sprintf("pairbench egress: upstream %s failed: %s", t, msg), http.StatusBadGateway)
}

// scrubText returns s with the egress's secrets scrubbed from it, for text
// the proxy writes itself from what an upstream sent.
func (e *Egress) scrubText(s string) string {
	if e.scrub == nil {
		return s
	}
	return e.scrub.string(s)
}

// deny answers 403 with a body naming the host and the reason.
func (e *Egress) deny(w http.ResponseWriter, r *http.Request, err error) {
	var denied *DeniedError
	if !errors.As(err, &denied) {
		msg := e.scrubText(err.Error())
		if e.refusals.Count() {
			e.log.Warn("egress failed", "method", ClipForLog(r.Method), "host", ClipForLog(r.Host), "err", ClipForLog(msg))
		}
		http.Error(w, "pairbench egress: "+msg, http.StatusBadGateway)
		return
	}
	if e.refusals.Count() {
		e.log.Warn("egress denied", "method", ClipForLog(r.Method), "host", ClipForLog(denied.Host), "port", denied.Port, "reason", ClipForLog(denied.Reason))
	}
	if e.onDeny != nil {
		e.onDeny(&DeniedError{Host: ClipForLog(denied.Host), Port: denied.Port, Reason: ClipForLog(denied.Reason)})
	}
	http.Error(w, e.scrubText(fmt.Sprintf("pairbench egress: request to %q denied: %s", denied.Host, denied.Reason)), http.StatusForbidden)
}
