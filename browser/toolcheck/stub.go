package toolcheck

import (
	"bufio"
	"crypto/tls"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"time"
)

// StubCSP is the Content-Security-Policy of the stub pages: no script of
// the page's own, no eval, no inline code. Tool files register under it,
// as they must on sites that forbid eval.
const StubCSP = "default-src 'none'; script-src 'none'; base-uri 'none'; form-action 'none'; require-trusted-types-for 'script'"

// stubPage is every page the stub site serves.
const stubPage = "<!doctype html><title>pairbench validate --browser</title><p>A blank page for registering tool files.</p>\n"

// Stub serves a blank page under StubCSP at every URL of every host, over
// http and https on one loopback port, so that a browser whose hosts all map
// there can load any URL a tool's patterns match without the real site. Its
// https certificate is self-signed: the browser must ignore certificate
// errors (Chromium's --ignore-certificate-errors).
type Stub struct {
	srv  *http.Server
	ln   *sniffListener
	done chan struct{}
}

// StartStub starts the stub site on a free loopback port.
func StartStub() (*Stub, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	// httptest's certificate, self-signed; the browser ignores the errors.
	tlsSrv := httptest.NewUnstartedServer(nil)
	tlsSrv.StartTLS()
	cfg := tlsSrv.TLS.Clone()
	tlsSrv.Close()
	s := &Stub{
		srv: &http.Server{Handler: http.HandlerFunc(serveStub), ReadHeaderTimeout: 10 * time.Second,
			ErrorLog: log.New(io.Discard, "", 0)},
		ln:   newSniffListener(ln, cfg),
		done: make(chan struct{}),
	}
	go func() {
		defer close(s.done)
		_ = s.srv.Serve(s.ln)
	}()
	return s, nil
}

// Addr is the stub's "127.0.0.1:PORT".
func (s *Stub) Addr() string { return s.ln.Addr().String() }

// Close stops the stub and waits for it.
func (s *Stub) Close() error {
	err := s.srv.Close()
	<-s.done
	return err
}

func serveStub(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/favicon.ico" {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Security-Policy", StubCSP)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	io.WriteString(w, stubPage)
}

// sniffListener hands out each accepted connection as TLS when its first
// byte opens a TLS handshake, as plain TCP otherwise. The first byte is read
// off the accepting goroutine, so a silent client holds up no other.
type sniffListener struct {
	net.Listener
	cfg   *tls.Config
	conns chan net.Conn
	once  sync.Once
	done  chan struct{}
	err   error
}

func newSniffListener(ln net.Listener, cfg *tls.Config) *sniffListener {
	l := &sniffListener{Listener: ln, cfg: cfg, conns: make(chan net.Conn), done: make(chan struct{})}
	go l.acceptLoop()
	return l
}

func (l *sniffListener) acceptLoop() {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			l.once.Do(func() { l.err = err; close(l.done) })
			return
		}
		go l.sniff(c)
	}
}

// sniff reads c's first byte (within a few seconds) and passes c on.
func (l *sniffListener) sniff(c net.Conn) {
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	br := bufio.NewReader(c)
	first, err := br.Peek(1)
	c.SetReadDeadline(time.Time{})
	if err != nil {
		c.Close()
		return
	}
	var out net.Conn = &peekedConn{Conn: c, r: br}
	if first[0] == 0x16 { // a TLS handshake record
		out = tls.Server(out, l.cfg)
	}
	select {
	case l.conns <- out:
	case <-l.done:
		c.Close()
	}
}

func (l *sniffListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, l.err
	}
}

func (l *sniffListener) Close() error {
	err := l.Listener.Close()
	l.once.Do(func() { l.err = net.ErrClosed; close(l.done) })
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}

// peekedConn is a connection whose first bytes were read into r.
type peekedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *peekedConn) Read(p []byte) (int, error) { return c.r.Read(p) }
