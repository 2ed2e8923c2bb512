// Package server is pairbench's HTTP face: it receives GitHub webhook
// deliveries, checks them, hands each to an Inbox that stores it durably,
// and answers only once the Inbox has: a 2xx means the delivery is
// committed, so GitHub's delivery log never shows success for work that a
// crash could lose. It also serves /healthz, /metrics and the report links.
// It is the only package that imports gin; GitHub decisions belong to
// package bot, which this package knows only through the Inbox interface.
//
// A delivery goes through these steps, in order:
//
//  1. body read, at most Config.MaxBodyBytes (413 beyond);
//  2. X-Hub-Signature-256 verified in constant time (401 if missing, malformed
//     or wrong; the SHA-1 header is never used);
//  3. content type application/json required (415; form-encoded refused);
//  4. X-GitHub-Event and X-GitHub-Delivery present, payload a JSON object (400);
//  5. "ping" answered 200; events the Inbox does not take answered 202 and
//     counted as ignored;
//  6. stored by the Inbox and answered 202; a delivery it already holds,
//     keyed by (installation id, delivery id), answered 200 as a duplicate;
//     if it cannot store the delivery (within Config.AcceptTimeout), or the
//     server is shutting down, 503 with Retry-After — never a silent drop.
package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"runtime/debug"
	"slices"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
)

// Delivery is one verified webhook delivery.
type Delivery struct {
	ID             string // X-GitHub-Delivery
	Event          string // X-GitHub-Event, e.g. "pull_request"
	InstallationID int64  // the payload's installation.id; 0 if it has none
	Payload        []byte // the raw JSON body
	// Logger carries the delivery id, event and installation on every line.
	Logger *slog.Logger
}

// Inbox takes verified deliveries.
type Inbox interface {
	// Accept stores d where a crash cannot lose it, with whatever will
	// process it, and returns true once that is committed; false for a
	// delivery it already holds. It must honour ctx.
	Accept(ctx context.Context, d Delivery) (accepted bool, err error)
}

// InboxFunc adapts a function to Inbox.
type InboxFunc func(ctx context.Context, d Delivery) (bool, error)

// Accept calls f.
func (f InboxFunc) Accept(ctx context.Context, d Delivery) (bool, error) { return f(ctx, d) }

// Config configures a Server. Secret and Inbox are required; every other
// zero field takes the default its comment gives.
type Config struct {
	// Secret is the webhook secret shared with GitHub.
	Secret []byte
	// Inbox stores accepted deliveries.
	Inbox Inbox
	// Events lists the events passed to the Inbox; other events are
	// answered 202 and counted as ignored. Empty passes every event but
	// "ping".
	Events []string
	// Reports, if set, serves GET /runs/... (the stable report links).
	Reports http.Handler
	// Logger receives the server's logs; default: discard.
	Logger *slog.Logger
	// Metrics records what happens; default: NewMetrics().
	Metrics *Metrics
	// MaxBodyBytes caps a payload; default DefaultMaxBodyBytes (GitHub's cap).
	MaxBodyBytes int64
	// AcceptTimeout bounds one Accept: GitHub gives up on an answer after
	// 10 s, and a 503 tells it (and the operator) more; default 5 s.
	AcceptTimeout time.Duration
}

// ErrClosed is returned by Serve after Shutdown.
var ErrClosed = errors.New("server: closed")

// Server is the webhook service. Create it with New, serve with Serve (or
// mount Handler in a server of your own), and stop it with Shutdown.
type Server struct {
	secret   []byte
	inbox    Inbox
	events   map[string]bool // nil: every event
	reports  http.Handler
	log      *slog.Logger
	metrics  *Metrics
	maxBody  int64
	timeout  time.Duration
	engine   *gin.Engine
	inFlight sync.WaitGroup // Accept calls under way

	mu           sync.Mutex
	closed       bool
	httpSrv      *http.Server
	shutdownOnce sync.Once
	shutdownErr  error
}

// New checks cfg and returns the Server. It refuses an empty secret: an
// unsigned webhook endpoint would run benches for anyone. It puts gin in
// release mode (gin's mode is process-wide; pairbench never wants gin's
// debug route listing).
func New(cfg Config) (*Server, error) {
	if len(cfg.Secret) == 0 {
		return nil, errors.New("server: no webhook secret; refusing to accept unsigned deliveries")
	}
	if cfg.Inbox == nil {
		return nil, errors.New("server: no inbox")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Metrics == nil {
		cfg.Metrics = NewMetrics()
	}
	cfg.MaxBodyBytes = orDefault(cfg.MaxBodyBytes, DefaultMaxBodyBytes)
	cfg.AcceptTimeout = orDefault(cfg.AcceptTimeout, 5*time.Second)
	s := &Server{
		secret:  slices.Clone(cfg.Secret),
		inbox:   cfg.Inbox,
		reports: cfg.Reports,
		log:     cfg.Logger,
		metrics: cfg.Metrics,
		maxBody: cfg.MaxBodyBytes,
		timeout: cfg.AcceptTimeout,
	}
	if len(cfg.Events) > 0 {
		s.events = map[string]bool{}
		for _, e := range cfg.Events {
			s.events[e] = true
		}
	}
	s.engine = s.routes()
	return s, nil
}

// orDefault returns v, or def when v is not positive.
func orDefault[T int | int64 | time.Duration](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}

func (s *Server) routes() *gin.Engine {
	gin.SetMode(gin.ReleaseMode)
	e := gin.New()
	e.HandleMethodNotAllowed = true
	_ = e.SetTrustedProxies(nil) // never trust X-Forwarded-For; nil cannot fail to parse
	e.Use(s.recoverPanic)
	e.POST("/webhook", s.webhook)
	e.GET("/healthz", s.healthz)
	e.GET("/metrics", gin.WrapH(s.metrics.handler()))
	if s.reports != nil {
		e.GET("/runs/*path", gin.WrapH(s.reports))
		e.HEAD("/runs/*path", gin.WrapH(s.reports))
	}
	return e
}

// Handler returns the HTTP handler: POST /webhook, GET /healthz, GET
// /metrics, and GET /runs/... with Config.Reports.
func (s *Server) Handler() http.Handler { return s.engine }

// Serve answers HTTP on l until Shutdown, then returns nil. It returns
// ErrClosed if Shutdown has already been called.
func (s *Server) Serve(l net.Listener) error {
	srv := &http.Server{
		Handler:           s.engine,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       time.Minute, // a 25 MiB body from a slow link
		WriteTimeout:      time.Minute,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	s.mu.Lock()
	switch {
	case s.closed:
		s.mu.Unlock()
		return ErrClosed
	case s.httpSrv != nil:
		s.mu.Unlock()
		return errors.New("server: already serving")
	}
	s.httpSrv = srv
	s.mu.Unlock()

	s.log.Info("serving", "addr", l.Addr().String())
	if err := srv.Serve(l); !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("server: %w", err)
	}
	return nil
}

// Shutdown stops the server: it refuses new deliveries with 503, stops
// accepting connections and waits for the requests in progress (each
// either stored its delivery or answered 503) until ctx ends. Later calls
// return the first call's result.
func (s *Server) Shutdown(ctx context.Context) error {
	s.shutdownOnce.Do(func() { s.shutdownErr = s.shutdown(ctx) })
	return s.shutdownErr
}

func (s *Server) shutdown(ctx context.Context) error {
	s.log.Info("shutting down")
	s.mu.Lock()
	s.closed = true
	srv := s.httpSrv
	s.mu.Unlock()
	var errs []error
	if srv != nil {
		if err := srv.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("server: stop HTTP: %w", err))
		}
	}
	done := make(chan struct{})
	go func() { s.inFlight.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		errs = append(errs, fmt.Errorf("server: deliveries still being stored: %w", ctx.Err()))
	}
	s.log.Info("stopped")
	return errors.Join(errs...)
}

// begin registers a delivery being stored, unless the server is closed.
func (s *Server) begin() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.inFlight.Add(1)
	return true
}

func (s *Server) webhook(c *gin.Context) {
	start := time.Now()
	r := c.Request
	log := s.log.With("delivery", clip(r.Header.Get(headerDelivery)))
	defer func() { s.metrics.ackSeconds.Observe(time.Since(start).Seconds()) }()

	refuse := func(rej *rejection) {
		s.metrics.deliveries.WithLabelValues("-", rej.result).Inc()
		log.Warn("delivery refused", "status", rej.status, "reason", rej.msg, "remote", r.RemoteAddr)
		c.JSON(rej.status, gin.H{"error": rej.msg})
	}

	if r.ContentLength > s.maxBody {
		refuse(reject(http.StatusRequestEntityTooLarge, resultTooLarge, "payload of %d bytes exceeds the %d-byte limit", r.ContentLength, s.maxBody))
		return
	}
	body, err := readBody(c.Writer, r, s.maxBody)
	if err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			refuse(reject(http.StatusRequestEntityTooLarge, resultTooLarge, "payload exceeds the %d-byte limit", s.maxBody))
		} else {
			refuse(reject(http.StatusBadRequest, resultBadReq, "reading payload: %v", err))
		}
		return
	}
	d, rej := decode(s.secret, r.Header, body)
	if rej != nil {
		refuse(rej)
		return
	}
	d.Logger = log.With("event", d.Event, "installation", d.InstallationID)
	count := func(result string) { s.metrics.deliveries.WithLabelValues(d.Event, result).Inc() }

	switch {
	case d.Event == "ping":
		count(resultPing)
		d.Logger.Info("ping")
		c.JSON(http.StatusOK, gin.H{"status": "pong"})
		return
	case s.events != nil && !s.events[d.Event]:
		count(resultIgnored)
		d.Logger.Info("event ignored")
		c.JSON(http.StatusAccepted, gin.H{"status": "ignored", "delivery": d.ID})
		return
	}

	if !s.begin() {
		count(resultClosing)
		d.Logger.Warn("shutting down; delivery refused")
		c.Header("Retry-After", "30")
		c.JSON(http.StatusServiceUnavailable, gin.H{"error": "shutting down; redeliver later"})
		return
	}
	defer s.inFlight.Done()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), s.timeout)
	defer cancel()
	accepted, err := s.inbox.Accept(ctx, d)
	switch {
	case err != nil:
		count(resultStoreError)
		d.Logger.Error("could not store the delivery; refused with 503", "err", err)
		c.Header("Retry-After", "10")
		c.JSON(http.StatusServiceUnavailable, gin.H{"error": "the delivery could not be stored; redeliver it"})
	case accepted:
		count(resultStored)
		d.Logger.Info("delivery stored", "bytes", len(body))
		c.JSON(http.StatusAccepted, gin.H{"status": "stored", "delivery": d.ID})
	default:
		count(resultDuplicate)
		d.Logger.Info("duplicate delivery ignored")
		c.JSON(http.StatusOK, gin.H{"status": "duplicate", "delivery": d.ID})
	}
}

// clip shortens an unverified header value for the logs.
func clip(v string) string {
	if len(v) > maxHeaderValue {
		return v[:maxHeaderValue] + "…"
	}
	return v
}

// readBody reads the request body, refusing more than max bytes, into a
// single allocation when the client declared the length.
func readBody(w http.ResponseWriter, r *http.Request, max int64) ([]byte, error) {
	body := http.MaxBytesReader(w, r.Body, max)
	if r.ContentLength <= 0 {
		return io.ReadAll(body)
	}
	buf := make([]byte, r.ContentLength)
	if _, err := io.ReadFull(body, buf); err != nil {
		return nil, err
	}
	if n, _ := body.Read(make([]byte, 1)); n > 0 {
		return nil, errors.New("body longer than its Content-Length")
	}
	return buf, nil
}

func (s *Server) healthz(c *gin.Context) {
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		c.JSON(http.StatusServiceUnavailable, gin.H{"status": "shutting down"})
		return
	}
	c.JSON(http.StatusOK, gin.H{"status": "ok"})
}

// recoverPanic answers 500 for a panic in a request handler and logs it with
// the delivery id, instead of gin's default of printing to stderr.
func (s *Server) recoverPanic(c *gin.Context) {
	defer func() {
		v := recover()
		if v == nil {
			return
		}
		if v == http.ErrAbortHandler {
			panic(v)
		}
		s.log.Error("request panicked", "delivery", clip(c.Request.Header.Get(headerDelivery)),
			"path", c.Request.URL.Path, "panic", v, "stack", string(debug.Stack()))
		c.AbortWithStatusJSON(http.StatusInternalServerError, gin.H{"error": "internal error"})
	}()
	c.Next()
}
