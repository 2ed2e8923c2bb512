// Package server is pairbench's HTTP face: it receives GitHub webhook
// deliveries, checks them, answers at once, and hands them to a Handler on a
// bounded queue worked by a fixed pool of workers that it owns. It also
// serves /healthz and /metrics. It is the only package that imports gin;
// GitHub decisions belong to the Handler (package bot), which this package
// knows only through the Handler interface.
//
// A delivery goes through these steps, in order:
//
//  1. body read, at most Config.MaxBodyBytes (413 beyond);
//  2. X-Hub-Signature-256 verified in constant time (401 if missing, malformed
//     or wrong; the SHA-1 header is never used);
//  3. content type application/json required (415; form-encoded refused);
//  4. X-GitHub-Event and X-GitHub-Delivery present, payload a JSON object (400);
//  5. "ping" answered 200; events the Handler does not take answered 202 and
//     counted as ignored;
//  6. a delivery already accepted, keyed by (installation id, delivery id),
//     answered 200 as a duplicate and not processed again;
//  7. queued and answered 202, or 503 with Retry-After if the queue is full
//     or the server is shutting down — never dropped silently.
package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
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

// Handler processes deliveries in the background, one call per delivery.
// Handle must return promptly once ctx is cancelled: that is how shutdown
// and Config.HandleTimeout stop it. A delivery whose Handle returned an error
// is forgotten by the deduplication, so a manual redelivery runs it again.
type Handler interface {
	Handle(ctx context.Context, d Delivery) error
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, d Delivery) error

// Handle calls f.
func (f HandlerFunc) Handle(ctx context.Context, d Delivery) error { return f(ctx, d) }

// Config configures a Server. Secret and Handler are required; every other
// zero field takes the default its comment gives.
type Config struct {
	// Secret is the webhook secret shared with GitHub.
	Secret []byte
	// Handler receives accepted deliveries.
	Handler Handler
	// Events lists the events passed to Handler; other events are answered
	// 202 and counted as ignored. Empty passes every event but "ping".
	Events []string
	// Logger receives the server's logs; default: discard.
	Logger *slog.Logger
	// Metrics records what happens; default: NewMetrics().
	Metrics *Metrics
	// Workers is the number of deliveries handled at once; default 4.
	Workers int
	// QueueSize bounds the deliveries waiting for a worker; default 256.
	QueueSize int
	// MaxBodyBytes caps a payload; default DefaultMaxBodyBytes (GitHub's cap).
	MaxBodyBytes int64
	// HandleTimeout bounds one Handle call; default 5 minutes.
	HandleTimeout time.Duration
	// DedupeTTL is how long a delivery id is remembered; default 72 hours
	// (GitHub offers redelivery for three days). DedupeMax bounds how many
	// are remembered, oldest forgotten first; default 100,000.
	DedupeTTL time.Duration
	DedupeMax int
	// Now is the clock for deduplication; default time.Now.
	Now func() time.Time
}

// ErrClosed is returned by Serve after Shutdown.
var ErrClosed = errors.New("server: closed")

// Server is the webhook service. Create it with New, serve with Serve (or
// mount Handler in a server of your own), and stop it with Shutdown, which
// every Server needs: New starts the workers.
type Server struct {
	secret  []byte
	handler Handler
	events  map[string]bool // nil: every event
	log     *slog.Logger
	metrics *Metrics
	maxBody int64
	timeout time.Duration
	engine  *gin.Engine

	// mu orders admission: the closed check, the dedupe decision and the
	// send on queue happen as one step, so two copies of a delivery racing
	// cannot both be refused or both be queued.
	mu     sync.Mutex
	closed bool
	queue  chan Delivery
	seen   *seenSet

	base    context.Context // parent of every Handle call; cancelled when shutdown gives up waiting
	abandon context.CancelFunc
	workers sync.WaitGroup
	dropped atomic.Int64

	httpMu       sync.Mutex
	httpSrv      *http.Server
	stopping     bool // Shutdown has begun; guarded by httpMu
	shutdownOnce sync.Once
	shutdownErr  error
}

// New checks cfg, starts the workers and returns the Server. It refuses an
// empty secret: an unsigned webhook endpoint would run benches for anyone.
// It puts gin in release mode (gin's mode is process-wide; pairbench never
// wants gin's debug route listing).
func New(cfg Config) (*Server, error) {
	if len(cfg.Secret) == 0 {
		return nil, errors.New("server: no webhook secret; refusing to accept unsigned deliveries")
	}
	if cfg.Handler == nil {
		return nil, errors.New("server: no handler")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Metrics == nil {
		cfg.Metrics = NewMetrics()
	}
	cfg.Workers = orDefault(cfg.Workers, 4)
	cfg.QueueSize = orDefault(cfg.QueueSize, 256)
	cfg.MaxBodyBytes = orDefault(cfg.MaxBodyBytes, DefaultMaxBodyBytes)
	cfg.HandleTimeout = orDefault(cfg.HandleTimeout, 5*time.Minute)
	cfg.DedupeTTL = orDefault(cfg.DedupeTTL, 72*time.Hour)
	cfg.DedupeMax = orDefault(cfg.DedupeMax, 100_000)
	if cfg.Now == nil {
		cfg.Now = time.Now
	}

	s := &Server{
		secret:  slices.Clone(cfg.Secret),
		handler: cfg.Handler,
		log:     cfg.Logger,
		metrics: cfg.Metrics,
		maxBody: cfg.MaxBodyBytes,
		timeout: cfg.HandleTimeout,
		queue:   make(chan Delivery, cfg.QueueSize),
		seen:    newSeenSet(cfg.DedupeTTL, cfg.DedupeMax, cfg.Now),
	}
	if len(cfg.Events) > 0 {
		s.events = map[string]bool{}
		for _, e := range cfg.Events {
			s.events[e] = true
		}
	}
	s.base, s.abandon = context.WithCancel(context.Background())
	s.engine = s.routes()
	for range cfg.Workers {
		s.workers.Go(s.work)
	}
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
	return e
}

// Handler returns the HTTP handler: POST /webhook, GET /healthz, GET /metrics.
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
	s.httpMu.Lock()
	switch {
	case s.stopping:
		s.httpMu.Unlock()
		return ErrClosed
	case s.httpSrv != nil:
		s.httpMu.Unlock()
		return errors.New("server: already serving")
	}
	s.httpSrv = srv
	s.httpMu.Unlock()

	s.log.Info("serving", "addr", l.Addr().String())
	if err := srv.Serve(l); !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("server: %w", err)
	}
	return nil
}

func (s *Server) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// Shutdown stops the server: it stops accepting connections and waits for
// requests in progress, refuses new deliveries with 503, lets the workers
// finish every queued delivery, and returns once they have. If ctx ends
// first, the Handler's contexts are cancelled, deliveries still queued are
// dropped (each logged and counted), and Shutdown returns an error wrapping
// ctx.Err() once the workers have exited. Later calls return the first
// call's result.
func (s *Server) Shutdown(ctx context.Context) error {
	s.shutdownOnce.Do(func() { s.shutdownErr = s.shutdown(ctx) })
	return s.shutdownErr
}

func (s *Server) shutdown(ctx context.Context) error {
	s.log.Info("shutting down", "queued", len(s.queue))
	var errs []error
	// Finish the requests in progress first: they may still queue deliveries.
	s.httpMu.Lock()
	s.stopping = true
	srv := s.httpSrv
	s.httpMu.Unlock()
	if srv != nil {
		if err := srv.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("server: stop HTTP: %w", err))
		}
	}
	s.mu.Lock()
	s.closed = true
	close(s.queue)
	s.mu.Unlock()

	drained := make(chan struct{})
	go func() { // exits when the workers do, which the select below ensures
		s.workers.Wait()
		close(drained)
	}()
	select {
	case <-drained:
	case <-ctx.Done():
		s.abandon()
		<-drained
		errs = append(errs, fmt.Errorf("server: shutdown: %d queued deliveries dropped: %w", s.dropped.Load(), ctx.Err()))
	}
	s.abandon()
	s.log.Info("stopped", "dropped", s.dropped.Load())
	return errors.Join(errs...)
}

// work handles queued deliveries until the queue is closed and empty.
func (s *Server) work() {
	for d := range s.queue {
		s.metrics.queueDepth.Dec()
		s.process(d)
	}
}

func (s *Server) process(d Delivery) {
	key := deliveryKey{d.InstallationID, d.ID}
	if s.base.Err() != nil {
		s.dropped.Add(1)
		s.seen.forget(key)
		s.metrics.handled.WithLabelValues(d.Event, "dropped").Inc()
		d.Logger.Error("delivery dropped at shutdown; redeliver it from the App's advanced settings")
		return
	}
	s.metrics.inFlight.Inc()
	defer s.metrics.inFlight.Dec()
	start := time.Now()
	err := s.handle(d)
	s.metrics.handleTime.WithLabelValues(d.Event).Observe(time.Since(start).Seconds())
	var p panicError
	switch {
	case err == nil:
		s.metrics.handled.WithLabelValues(d.Event, "ok").Inc()
		d.Logger.Info("delivery handled", "duration", time.Since(start))
	case errors.As(err, &p):
		s.seen.forget(key)
		s.metrics.handled.WithLabelValues(d.Event, "panic").Inc()
		d.Logger.Error("handler panicked", "panic", p.value, "stack", string(p.stack))
	default:
		s.seen.forget(key)
		s.metrics.handled.WithLabelValues(d.Event, "error").Inc()
		d.Logger.Error("handler failed", "err", err, "duration", time.Since(start))
	}
}

// handle calls the Handler under a timeout, turning a panic into an error.
func (s *Server) handle(d Delivery) (err error) {
	ctx, cancel := context.WithTimeout(s.base, s.timeout)
	defer cancel()
	defer func() {
		if v := recover(); v != nil {
			err = newPanicError(v)
		}
	}()
	return s.handler.Handle(ctx, d)
}

// admission is what became of a delivery offered to the queue.
type admission int

const (
	admitted admission = iota
	admitDuplicate
	admitFull
	admitClosed
)

// admit dedupes d and queues it, as one step.
func (s *Server) admit(d Delivery) admission {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return admitClosed
	}
	key := deliveryKey{d.InstallationID, d.ID}
	if !s.seen.add(key) {
		return admitDuplicate
	}
	select {
	case s.queue <- d:
		s.metrics.queueDepth.Inc()
		return admitted
	default:
		s.seen.forget(key)
		return admitFull
	}
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

	switch s.admit(d) {
	case admitted:
		count(resultQueued)
		d.Logger.Info("delivery queued", "bytes", len(body))
		c.JSON(http.StatusAccepted, gin.H{"status": "queued", "delivery": d.ID})
	case admitDuplicate:
		count(resultDuplicate)
		d.Logger.Info("duplicate delivery ignored")
		c.JSON(http.StatusOK, gin.H{"status": "duplicate", "delivery": d.ID})
	case admitFull:
		count(resultQueueFull)
		d.Logger.Warn("queue full; delivery refused", "queue", cap(s.queue))
		c.Header("Retry-After", "5")
		c.JSON(http.StatusServiceUnavailable, gin.H{"error": "queue full; redeliver later"})
	case admitClosed:
		count(resultClosing)
		d.Logger.Warn("shutting down; delivery refused")
		c.Header("Retry-After", "30")
		c.JSON(http.StatusServiceUnavailable, gin.H{"error": "shutting down; redeliver later"})
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
	if s.isClosed() {
		c.JSON(http.StatusServiceUnavailable, gin.H{"status": "shutting down"})
		return
	}
	c.JSON(http.StatusOK, gin.H{"status": "ok", "queued": len(s.queue)})
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
		p := newPanicError(v)
		s.log.Error("request panicked", "delivery", clip(c.Request.Header.Get(headerDelivery)),
			"path", c.Request.URL.Path, "panic", p.value, "stack", string(p.stack))
		c.AbortWithStatusJSON(http.StatusInternalServerError, gin.H{"error": "internal error"})
	}()
	c.Next()
}
