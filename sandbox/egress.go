package sandbox

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/http/httputil"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/http/httpguts"
	"golang.org/x/sys/unix"

	"github.com/pairbench/pairbench/internal/heldir"
	"github.com/pairbench/pairbench/internal/sandboxinit"
)

// Secret is a credential the sandbox may use but never see. The sandbox's
// environment holds a placeholder under Name; the egress proxy puts Value in
// its place in the authorization headers of TLS requests to Hosts, and
// refuses any request that carries the placeholder anywhere else.
type Secret struct {
	Name  string   // environment variable name, e.g. "OPENAI_API_KEY"
	Value string   // the real value; it never enters the sandbox
	Hosts []string // exact hosts or *.suffix patterns it is scoped to; each must be allowed
	// Headers are the request headers the placeholder is swapped in, as
	// the whole value or after one scheme word ("Bearer PLACEHOLDER").
	// Empty means Authorization, X-Api-Key, Api-Key and X-Goog-Api-Key.
	Headers []string
}

// ParseSecret parses a command-line secret "NAME=HOSTVAR@HOST[,HOST...]":
// the sandbox sees a placeholder under NAME, the real value is getenv(HOSTVAR)
// on the host, and the proxy swaps it in for the HOSTs only (exact or
// *.suffix). "NAME@HOST" is short for "NAME=NAME@HOST". It fails when the
// host variable is empty, so a missing key is noticed before the run.
func ParseSecret(spec string, getenv func(string) string) (Secret, error) {
	vars, hosts, ok := strings.Cut(spec, "@")
	if !ok || hosts == "" {
		return Secret{}, fmt.Errorf("secret %q: want NAME=HOSTVAR@HOST", spec)
	}
	name, hostVar, ok := strings.Cut(vars, "=")
	if !ok {
		hostVar = name
	}
	if !envName().MatchString(name) || !envName().MatchString(hostVar) {
		return Secret{}, fmt.Errorf("secret %q: NAME and HOSTVAR must be environment variable names", spec)
	}
	s := Secret{Name: name, Value: getenv(hostVar)}
	for _, h := range strings.Split(hosts, ",") {
		if err := (AllowRule{Host: h}).validate(); err != nil {
			return Secret{}, fmt.Errorf("secret %q: %w", spec, err)
		}
		s.Hosts = append(s.Hosts, h)
	}
	if s.Value == "" {
		return Secret{}, fmt.Errorf("secret %s: host variable %s is empty or unset", name, hostVar)
	}
	return s, nil
}

// EgressConfig configures NewEgress. The zero value allows nothing.
type EgressConfig struct {
	// Allow lists the destinations the sandbox may reach through the proxy.
	Allow []AllowRule
	// ForwardPorts are host loopback ports the sandbox reaches transparently
	// on the same port of its own loopback (for clients that ignore proxy
	// variables, such as a CDP websocket client). They are also allowed
	// through the proxy as 127.0.0.1:PORT and localhost:PORT.
	ForwardPorts []int
	// ForwardSockets relays a sandbox loopback port (the key) to a unix
	// socket on the host (the value): a service with no TCP port outside,
	// such as one another sandbox exposes (Expose). Unlike ForwardPorts,
	// these ports are not reachable through the proxy.
	ForwardSockets map[int]string
	// Web, when set, opens the public web the way a browser needs it (see
	// WebAccess). It cannot be combined with Secrets.
	Web *WebAccess
	// Secrets are swapped in by the proxy; the sandbox sees placeholders only.
	Secrets []Secret
	// AllowLoopbackHosts lists host names that may resolve to a loopback
	// address (by default every name resolving to a non-public address is
	// refused). Every other non-public range stays refused for them.
	AllowLoopbackHosts []string
	// Resolver resolves destination names on the host; nil means net.DefaultResolver.
	Resolver Resolver
	// UpstreamRoots verifies upstream TLS servers; nil means the system roots.
	UpstreamRoots *x509.CertPool
	// ProxyPort is the sandbox loopback port the proxy is reached on; 0 means 3128.
	ProxyPort int
	// SandboxDir is where the socket directory is mounted inside the
	// sandbox; "" means /.pairbench/egress.
	SandboxDir string
	// TempDir is the parent of the fresh host socket directory; "" means os.TempDir().
	TempDir string
	// Logger receives a record per refused request (Warn), for the first
	// refusalLogBurst of them, then one every refusalLogEvery counting the
	// rest, and one per allowed request (Debug); nil discards. Records never
	// hold secret values, nor more than refusalLogMax bytes of anything the
	// sandbox sent.
	Logger *slog.Logger
	// OnDeny, when set, is called with every refusal of a destination or
	// request (from the proxy's goroutines), its Host and Reason cut to
	// refusalLogMax bytes.
	OnDeny func(*DeniedError)
	// MaxConns bounds the connections the egress serves at once, from its
	// sandbox to the proxy and the forwarded ports, and the requests it
	// has upstream at once; more wait. Each costs the launcher descriptors,
	// which one sandbox must not exhaust for every other. 0 means
	// DefaultMaxConns.
	MaxConns int
	// Upstream, when set, wraps the transport every allowed request goes
	// upstream through (after its placeholders are swapped): the caller may
	// watch, meter or refuse requests (an agent's model gate does).
	Upstream func(http.RoundTripper) http.RoundTripper
}

// minSecretLen is the shortest secret value accepted: responses are scrubbed
// of every occurrence, which must not match ordinary text.
const minSecretLen = 8

// DefaultMaxConns is how many connections one egress serves at a time
// unless configured.
const DefaultMaxConns = 64

// DefaultProxyPort is the sandbox loopback port of the proxy unless configured.
const DefaultProxyPort = 3128

// DefaultEgressDir is where the socket directory appears inside the sandbox.
const DefaultEgressDir = "/.pairbench/egress"

// File names inside the socket directory.
const (
	proxySocket = "proxy.sock"
	caFile      = "ca.pem"     // the per-run CA certificate alone (NODE_EXTRA_CA_CERTS)
	bundleFile  = "bundle.pem" // system roots + the per-run CA (SSL_CERT_FILE)
)

func portSocket(port int) string { return "port-" + strconv.Itoa(port) + ".sock" }

// envName matches an environment variable's name. This package's regular
// expressions are compiled at first use, not at start-up: the sandbox's
// init (InitProgram) links this package and uses none of them, and every
// launch waits for its start-up.
var envName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`) })

// placeholder is a secret as the sandbox knows it.
type placeholder struct {
	Secret
	token string
}

// Egress is the sandbox's only way out: an HTTP proxy (CONNECT and
// absolute-form http) and transparent loopback port forwards, each served
// on a unix socket in a fresh host directory that the launcher binds into
// the sandbox. It enforces the allowlist, terminates TLS with a per-run CA
// so it can check every request, and swaps secret placeholders.
type Egress struct {
	log        *slog.Logger
	dir        string
	hold       *os.File // dir, flocked while the proxy lives (see CleanStale)
	sandboxDir string
	proxyPort  int
	forward    []int
	sockets    map[int]string // ForwardSockets
	web        bool           // tunnels are relayed as they are, never terminated
	onDeny     func(*DeniedError)
	pol        *policy
	ca         *authority
	secrets    []placeholder
	transport  *http.Transport // upstream, HTTP/2 where offered
	proxy      *httputil.ReverseProxy

	upgradeTransport *http.Transport // upstream for protocol upgrades, HTTP/1.1 only
	upstream         func(http.RoundTripper) http.RoundTripper

	proxySrv *http.Server   // HTTP proxy on proxy.sock
	tlsSrv   *http.Server   // requests inside TLS tunnels (terminated)
	plainSrv *http.Server   // requests inside plaintext tunnels
	tlsL     *connListener  // feeds tlsSrv
	plainL   *connListener  // feeds plainSrv
	fwdLs    []net.Listener // port-N.sock listeners

	relayMu sync.Mutex
	relays  map[net.Conn]struct{}
	wg      sync.WaitGroup

	admitMu  sync.Mutex
	admitted map[int]int // host uid -> sandboxes of that uid using this egress

	refusals *RefusalLog   // which refusals are logged (see refusalLogBurst)
	scrub    *scrubber     // removes the secrets from what comes back; nil without secrets
	conns    chan struct{} // a slot per connection served (MaxConns)
	closing  chan struct{} // closed by Close
	requests chan struct{} // a slot per request upstream (MaxConns)

	closeOnce sync.Once
	stopCtx   func() bool
}

// NewEgress validates cfg, creates the socket directory (mode 0700) with the
// per-run CA certificate and bundle, and starts serving. The Egress stops
// when ctx is done or Close is called, whichever comes first.
func NewEgress(ctx context.Context, cfg EgressConfig) (*Egress, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var resolver Resolver = net.DefaultResolver
	if cfg.Resolver != nil {
		resolver = cfg.Resolver
	}
	e := &Egress{
		log:        log,
		sandboxDir: cfg.SandboxDir,
		proxyPort:  cfg.ProxyPort,
		forward:    slices.Clone(cfg.ForwardPorts),
		sockets:    maps.Clone(cfg.ForwardSockets),
		web:        cfg.Web != nil,
		onDeny:     cfg.OnDeny,
		upstream:   cfg.Upstream,
		relays:     map[net.Conn]struct{}{},
		admitted:   map[int]int{},
		refusals:   NewRefusalLog(log, "egress"),
	}
	maxConns := cfg.MaxConns
	if maxConns <= 0 {
		maxConns = DefaultMaxConns
	}
	e.conns, e.requests = make(chan struct{}, maxConns), make(chan struct{}, maxConns)
	e.closing = make(chan struct{})
	if e.sandboxDir == "" {
		e.sandboxDir = DefaultEgressDir
	}
	if e.proxyPort == 0 {
		e.proxyPort = DefaultProxyPort
	}
	var err error
	rules := slices.Clone(cfg.Allow)
	loopback := slices.Clone(cfg.AllowLoopbackHosts)
	if len(e.forward) > 0 {
		rules = append(rules, AllowRule{Host: "127.0.0.1", Ports: e.forward}, AllowRule{Host: "localhost", Ports: e.forward})
		loopback = append(loopback, "localhost")
	}
	for i, h := range loopback {
		loopback[i] = normalizeHost(h)
	}
	e.pol = &policy{rules: rules, loopbackHosts: loopback, resolver: resolver, dialer: net.Dialer{Timeout: 15 * time.Second}}
	if cfg.Web != nil {
		if e.pol.web, err = newWebPolicy(*cfg.Web); err != nil {
			return nil, err
		}
	}
	for _, s := range cfg.Secrets {
		tok, err := newPlaceholder()
		if err != nil {
			return nil, err
		}
		e.secrets = append(e.secrets, placeholder{Secret: s, token: tok})
	}
	e.scrub = newScrubber(e.secrets)
	if !e.web { // a web egress terminates no TLS: it needs no CA
		if e.ca, err = newAuthority(time.Now()); err != nil {
			return nil, err
		}
	}
	e.transport = &http.Transport{
		Proxy:                 nil, // never the host's proxy variables
		DialContext:           e.pol.dialContext,
		ForceAttemptHTTP2:     true,
		TLSClientConfig:       &tls.Config{RootCAs: cfg.UpstreamRoots, MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout:   15 * time.Second,
		MaxIdleConnsPerHost:   16,
		MaxConnsPerHost:       maxConns,
		IdleConnTimeout:       90 * time.Second,
		ResponseHeaderTimeout: 5 * time.Minute,
	}

	// Protocol upgrades (websockets) need HTTP/1.1 upstream.
	e.upgradeTransport = e.transport.Clone()
	e.upgradeTransport.ForceAttemptHTTP2 = false
	e.upgradeTransport.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
	e.upgradeTransport.TLSClientConfig.NextProtos = []string{"http/1.1"}
	e.proxy = e.newReverseProxy()

	if e.dir, e.hold, err = heldir.Make(cfg.TempDir, egressDirPrefix); err != nil {
		return nil, fmt.Errorf("egress socket directory: %w", err)
	}
	if os.Geteuid() == 0 {
		// A root launcher's sandboxes run as other, unprivileged users:
		// they must be able to enter the directory (not list it) and
		// connect to its sockets. Who may actually talk to the proxy is
		// decided per connection (admit).
		if err := os.Chmod(e.dir, 0o711); err != nil {
			e.Close()
			return nil, fmt.Errorf("egress socket directory: %w", err)
		}
	}
	if err := e.start(); err != nil {
		e.Close()
		return nil, err
	}
	e.stopCtx = context.AfterFunc(ctx, func() { e.Close() })
	log.Debug("egress proxy ready", "dir", e.dir, "rules", len(rules), "forward", e.forward, "secrets", len(e.secrets))
	return e, nil
}

func (cfg *EgressConfig) validate() error {
	for _, r := range cfg.Allow {
		if err := r.validate(); err != nil {
			return err
		}
	}
	ports := map[int]bool{}
	proxyPort := cfg.ProxyPort
	if proxyPort == 0 {
		proxyPort = DefaultProxyPort
	}
	if proxyPort < 1 || proxyPort > 65535 {
		return fmt.Errorf("egress proxy port %d out of range", proxyPort)
	}
	ports[proxyPort] = true
	for _, p := range slices.Concat(cfg.ForwardPorts, slices.Sorted(maps.Keys(cfg.ForwardSockets))) {
		if p < 1 || p > 65535 {
			return fmt.Errorf("forward port %d out of range", p)
		}
		if ports[p] {
			return fmt.Errorf("forward port %d listed twice or equal to the proxy port", p)
		}
		ports[p] = true
	}
	for p, socket := range cfg.ForwardSockets {
		if !filepath.IsAbs(socket) {
			return fmt.Errorf("forward port %d: socket %q is not an absolute path", p, socket)
		}
	}
	if cfg.MaxConns < 0 {
		return fmt.Errorf("egress: MaxConns %d is negative", cfg.MaxConns)
	}
	if cfg.Web != nil && len(cfg.Secrets) > 0 {
		return errors.New("egress: a web egress relays TLS as it is and cannot swap secrets")
	}
	names := map[string]bool{}
	for _, s := range cfg.Secrets {
		switch {
		case !envName().MatchString(s.Name):
			return fmt.Errorf("secret name %q is not an environment variable name", s.Name)
		case names[s.Name]:
			return fmt.Errorf("secret %s listed twice", s.Name)
		case len(s.Value) < minSecretLen:
			return fmt.Errorf("secret %s is shorter than %d bytes: too short to swap and scrub safely", s.Name, minSecretLen)
		case len(s.Hosts) == 0:
			return fmt.Errorf("secret %s is scoped to no host", s.Name)
		}
		for _, h := range s.Headers {
			if !httpguts.ValidHeaderFieldName(h) {
				return fmt.Errorf("secret %s: %q is not a header name", s.Name, h)
			}
		}
		names[s.Name] = true
		for _, h := range s.Hosts {
			if !cfg.allowsSomePort(normalizeHost(h)) {
				return fmt.Errorf("secret %s is scoped to %s, which no allow rule covers", s.Name, h)
			}
		}
	}
	return nil
}

// allowsSomePort reports whether a rule covers pattern (an exact host, or
// *.suffix covered by an equal or wider wildcard).
func (cfg *EgressConfig) allowsSomePort(pattern string) bool {
	for _, r := range cfg.Allow {
		rh := normalizeHost(r.Host)
		if rh == pattern || matchesHost(rh, pattern) || (len(pattern) > 1 && matchesHost(rh, pattern[1:])) {
			return true
		}
	}
	return false
}

func newPlaceholder() (string, error) {
	b := make([]byte, 20)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("secret placeholder: %w", err)
	}
	return "pairbench_placeholder_" + hex.EncodeToString(b), nil
}

// start writes the CA files and starts every listener and server.
func (e *Egress) start() error {
	if e.ca != nil {
		if err := e.writeCA(); err != nil {
			return err
		}
	}

	e.tlsL, e.plainL = newConnListener(), newConnListener()
	e.tlsSrv = &http.Server{
		Handler:           http.HandlerFunc(e.serveTunneled),
		TLSConfig:         &tls.Config{GetCertificate: e.certificateFor, MinVersion: tls.VersionTLS12},
		ConnContext:       tunnelContext,
		ReadHeaderTimeout: 30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(e.log.Handler(), slog.LevelDebug),
	}
	e.plainSrv = &http.Server{
		Handler:           http.HandlerFunc(e.serveTunneled),
		ConnContext:       tunnelContext,
		ReadHeaderTimeout: 30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(e.log.Handler(), slog.LevelDebug),
	}
	e.proxySrv = &http.Server{
		Handler:           http.HandlerFunc(e.serveProxy),
		ReadHeaderTimeout: 30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(e.log.Handler(), slog.LevelDebug),
	}

	pl, err := e.listenUnix(filepath.Join(e.dir, proxySocket))
	if err != nil {
		return err
	}
	for _, p := range e.forwardPorts() {
		l, err := e.listenUnix(filepath.Join(e.dir, portSocket(p)))
		if err != nil {
			pl.Close()
			return err
		}
		e.fwdLs = append(e.fwdLs, l)
	}
	e.serve(func() error { return e.tlsSrv.ServeTLS(e.tlsL, "", "") })
	e.serve(func() error { return e.plainSrv.Serve(e.plainL) })
	e.serve(func() error { return e.proxySrv.Serve(pl) })
	for i, l := range e.fwdLs {
		port := e.forwardPorts()[i]
		e.wg.Go(func() { e.acceptForward(l, port) })
	}
	return nil
}

// writeCA writes the per-run CA certificate and the bundle of the system
// roots with it into the socket directory.
func (e *Egress) writeCA() error {
	if err := os.WriteFile(filepath.Join(e.dir, caFile), e.ca.certPEM, 0o644); err != nil {
		return fmt.Errorf("write CA certificate: %w", err)
	}
	if systemBundle() == nil {
		e.log.Warn("no system CA bundle found; the sandbox's SSL_CERT_FILE holds only the egress CA")
	}
	if err := os.WriteFile(filepath.Join(e.dir, bundleFile), bundleWith(e.ca.certPEM), 0o644); err != nil {
		return fmt.Errorf("write CA bundle: %w", err)
	}
	return nil
}

// forwardPorts are the sandbox ports relayed to the host: ForwardPorts,
// then ForwardSockets' in order.
func (e *Egress) forwardPorts() []int {
	return slices.Concat(e.forward, slices.Sorted(maps.Keys(e.sockets)))
}

func (e *Egress) serve(fn func() error) {
	e.wg.Go(func() {
		if err := fn(); err != nil && !errors.Is(err, http.ErrServerClosed) {
			e.log.Error("egress server stopped", "err", err)
		}
	})
}

// listenUnix listens on the unix socket path. Only connections from the
// launcher's own uid and from admitted sandboxes are accepted: the socket's
// mode lets a root launcher's sandbox users connect, its peer credentials
// say who did.
func (e *Egress) listenUnix(path string) (net.Listener, error) {
	l, err := listenUnixPath(path)
	if err != nil {
		return nil, fmt.Errorf("egress socket: %w", err)
	}
	mode := os.FileMode(0o600)
	if os.Geteuid() == 0 {
		mode = 0o666
	}
	if err := os.Chmod(path, mode); err != nil {
		l.Close()
		return nil, fmt.Errorf("egress socket: %w", err)
	}
	return &peerListener{Listener: l, e: e}, nil
}

// admit lets sandboxes running as host uid connect to the egress until the
// returned function is called.
func (e *Egress) admit(uid int) func() {
	e.admitMu.Lock()
	defer e.admitMu.Unlock()
	e.admitted[uid]++
	var once sync.Once
	return func() {
		once.Do(func() {
			e.admitMu.Lock()
			defer e.admitMu.Unlock()
			if e.admitted[uid]--; e.admitted[uid] <= 0 {
				delete(e.admitted, uid)
			}
		})
	}
}

// admits reports whether a peer running as host uid may use the egress.
func (e *Egress) admits(uid int) bool {
	if uid == os.Geteuid() {
		return true
	}
	e.admitMu.Lock()
	defer e.admitMu.Unlock()
	return e.admitted[uid] > 0
}

// peerListener accepts only connections from peers the egress admits,
// closing the others at once.
type peerListener struct {
	net.Listener
	e *Egress
}

func (l *peerListener) Accept() (net.Conn, error) {
	for {
		// A connection is accepted only once a slot is free: until then it
		// waits in the socket's backlog, costing the launcher nothing.
		select {
		case l.e.conns <- struct{}{}:
		case <-l.e.closing:
			return nil, net.ErrClosed
		}
		c, err := l.Listener.Accept()
		if err != nil {
			<-l.e.conns
			return nil, err
		}
		uid, err := peerUID(c)
		if err == nil && l.e.admits(uid) {
			return &slotConn{Conn: c, free: func() { <-l.e.conns }}, nil
		}
		<-l.e.conns
		l.e.log.Warn("egress refused a connection from a process it does not serve", "uid", uid, "err", err)
		c.Close()
	}
}

// slotConn is a served connection; closing it frees its slot, once.
type slotConn struct {
	net.Conn
	free func()
	once sync.Once
}

func (c *slotConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.free)
	return err
}

// slot waits for a free slot for a request upstream; false when ctx ends
// first.
func (e *Egress) slot(ctx context.Context) bool {
	select {
	case e.requests <- struct{}{}:
		return true
	case <-ctx.Done():
		return false
	}
}

func (e *Egress) freeSlot() { <-e.requests }

// peerUID returns the host uid of the process at the other end of a unix
// socket connection, as it was when it connected.
func peerUID(c net.Conn) (int, error) {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return -1, errors.New("not a unix socket connection")
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return -1, err
	}
	var cred *unix.Ucred
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return -1, err
	}
	if credErr != nil {
		return -1, credErr
	}
	return int(cred.Uid), nil
}

// acceptForward relays each connection on l to port on the host's
// loopback, or to the unix socket ForwardSockets names for it.
func (e *Egress) acceptForward(l net.Listener, port int) {
	dial := func() (net.Conn, error) { return e.pol.dialer.Dial("tcp", loopback(port)) }
	if socket, ok := e.sockets[port]; ok {
		dial = func() (net.Conn, error) { return DialUnix(context.Background(), socket) }
	}
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		if !e.track(c) {
			c.Close()
			return
		}
		e.wg.Go(func() {
			defer e.untrack(c)
			u, err := dial()
			if err != nil {
				if e.refusals.Count() {
					e.log.Warn("egress forward failed", "port", port, "err", err)
				}
				return
			}
			if !e.track(u) {
				u.Close()
				return
			}
			defer e.untrack(u)
			sandboxinit.Pipe(c, u)
		})
	}
}

// track registers a relay connection so Close can end it; it reports false
// once Close has begun.
func (e *Egress) track(c net.Conn) bool {
	e.relayMu.Lock()
	defer e.relayMu.Unlock()
	if e.relays == nil {
		return false
	}
	e.relays[c] = struct{}{}
	return true
}

// release stops tracking c without closing it (its new owner will).
func (e *Egress) release(c net.Conn) {
	e.relayMu.Lock()
	defer e.relayMu.Unlock()
	delete(e.relays, c)
}

// untrack closes c and stops tracking it.
func (e *Egress) untrack(c net.Conn) {
	c.Close()
	e.relayMu.Lock()
	defer e.relayMu.Unlock()
	delete(e.relays, c)
}

// Close stops every listener, ends open connections and relays, and removes
// the socket directory. It is safe to call more than once.
func (e *Egress) Close() error {
	e.closeOnce.Do(func() {
		close(e.closing)
		if e.stopCtx != nil {
			e.stopCtx()
		}
		for _, s := range []*http.Server{e.proxySrv, e.tlsSrv, e.plainSrv} {
			if s != nil {
				s.Close()
			}
		}
		for _, l := range []*connListener{e.tlsL, e.plainL} {
			if l != nil {
				l.Close()
			}
		}
		for _, l := range e.fwdLs {
			l.Close()
		}
		e.relayMu.Lock()
		for c := range e.relays {
			c.Close()
		}
		e.relays = nil
		e.relayMu.Unlock()
		e.wg.Wait()
		e.refusals.Flush()
		for _, tr := range []*http.Transport{e.transport, e.upgradeTransport} {
			if tr != nil {
				tr.CloseIdleConnections()
			}
		}
		if e.dir != "" {
			os.RemoveAll(e.dir)
		}
		if e.hold != nil {
			e.hold.Close()
		}
	})
	return nil
}

// Mounts returns the host socket directory and where the launcher must bind
// it inside the sandbox. A read-only bind suffices: connecting to a unix
// socket needs no write access to its file system.
func (e *Egress) Mounts() (hostDir, sandboxDir string) { return e.dir, e.sandboxDir }

// InitArgs returns the RunInit arguments (before its "--") that make the
// sandbox's init listen on 127.0.0.1:ProxyPort and on 127.0.0.1:PORT for
// every forwarded port, relaying to the sockets.
func (e *Egress) InitArgs() []string {
	args := []string{"-forward", e.initForward(e.proxyPort, proxySocket)}
	for _, p := range e.forwardPorts() {
		args = append(args, "-forward", e.initForward(p, portSocket(p)))
	}
	return args
}

// listenPorts are the ports the init listens on inside the sandbox for e.
func (e *Egress) listenPorts() []int { return append([]int{e.proxyPort}, e.forwardPorts()...) }

func (e *Egress) initForward(port int, socket string) string {
	return loopback(port) + "=" + filepath.Join(e.sandboxDir, socket)
}

// Env returns the variables the sandboxed command needs: the proxy
// variables, loopback exempted from the proxy (the sandbox's loopback holds
// only the forwarded ports), the CA variables, NODE_USE_ENV_PROXY, and each
// secret's placeholder under the secret's name. No value in it is secret.
func (e *Egress) Env() map[string]string {
	proxy := "http://127.0.0.1:" + strconv.Itoa(e.proxyPort)
	ca := filepath.Join(e.sandboxDir, caFile)
	bundle := filepath.Join(e.sandboxDir, bundleFile)
	env := map[string]string{
		"HTTP_PROXY":         proxy,
		"HTTPS_PROXY":        proxy,
		"http_proxy":         proxy,
		"https_proxy":        proxy,
		"NO_PROXY":           "localhost,127.0.0.1,::1",
		"no_proxy":           "localhost,127.0.0.1,::1",
		"NODE_USE_ENV_PROXY": "1",
	}
	if e.ca != nil {
		env["NODE_EXTRA_CA_CERTS"] = ca
		env["SSL_CERT_FILE"] = bundle
		env["REQUESTS_CA_BUNDLE"] = bundle
		env["CURL_CA_BUNDLE"] = bundle
	}
	for _, s := range e.secrets {
		env[s.Name] = s.token
	}
	return env
}

// Placeholder returns the placeholder that stands for the named secret in
// the sandbox, and false when no secret has that name.
func (e *Egress) Placeholder(name string) (string, bool) {
	for _, s := range e.secrets {
		if s.Name == name {
			return s.token, true
		}
	}
	return "", false
}

// CACertPEM returns the per-run CA certificate (PEM), as written to ca.pem.
// It is nil for a web egress, which has no CA.
func (e *Egress) CACertPEM() []byte {
	if e.ca == nil {
		return nil
	}
	return slices.Clone(e.ca.certPEM)
}
