// Package remote is what every cloud browser provider shares: a browser
// created by a service's API (Kernel, or any service that hands out a CDP
// websocket URL), driven over that websocket, and deleted when the trial is
// done. The services themselves are small (browser/kernel,
// browser/cdp); this package drives their browsers with pairbench's driver
// (driver.Connect) and owns the browsers' lives:
//
//   - Every browser created is tracked until its delete succeeds. A delete
//     that fails is retried: at the next Open, and at Close.
//   - A create is never cut short by the trial's context: a browser the
//     service made must be learnt of to be deleted. When nobody wants it any
//     more (the trial's context ended, or the provider is closing) it is
//     deleted as soon as it exists. Close waits for the creates under way.
//   - A quota or rate answer (a *QuotaError) holds back every Open until the
//     service's Retry-After has passed, so the setup's fresh browsers are
//     tried after it rather than at once.
//
// The agent never dials the service: its browser-control server reaches
// the browser through a unix socket on this host (Browser.DevTools) that the
// agent's sandbox relays to a loopback port of its own, and this package
// relays that socket to the browser's websocket. The service's URL, with
// any token it carries, and the service's API key stay on this host.
package remote

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pairbench/pairbench/browser/driver"
	"github.com/pairbench/pairbench/runner"
)

// Service creates and deletes browsers of one cloud browser service.
type Service interface {
	// Name is the service's name in messages ("kernel").
	Name() string
	// Create asks the service for a fresh browser as spec asks. An error
	// the service answered for quota or rate is a *QuotaError.
	Create(ctx context.Context, spec runner.BrowserSpec) (Session, error)
	// Delete ends the browser s. A browser already gone is not an error.
	Delete(ctx context.Context, s Session) error
}

// ProfileService is implemented by a Service that can say whether it holds
// a profile.
type ProfileService interface {
	HasProfile(ctx context.Context, name string) (bool, error)
}

// HasProfile asks the service whether it holds the profile name; a
// service that cannot say is trusted to (its creates will tell).
func (p *Provider) HasProfile(ctx context.Context, name string) (bool, error) {
	ps, ok := p.cfg.Service.(ProfileService)
	if !ok {
		return true, nil
	}
	has, err := ps.HasProfile(ctx, name)
	if err != nil {
		return false, fmt.Errorf("%s: profile %q: %w", p.cfg.Service.Name(), name, err)
	}
	return has, nil
}

// Session is one browser a service created.
type Session struct {
	// ID is the service's name for the browser, in messages and in Delete.
	ID string
	// CDPURL is the browser-level CDP websocket URL. It may carry a token:
	// it is never logged and never handed to an agent.
	CDPURL string
	// Profile is the profile the browser loaded ("" for none).
	Profile string
}

// QuotaError is a service's answer that it will not create a browser now
// (HTTP 429, or a quota spent).
type QuotaError struct {
	// Status is the HTTP status, Message the service's own words.
	Status  int
	Message string
	// RetryAfter is how long the service asked to wait (0: not said).
	RetryAfter time.Duration
}

func (e *QuotaError) Error() string {
	msg := fmt.Sprintf("quota or rate limit (HTTP %d): %s", e.Status, e.Message)
	if e.RetryAfter > 0 {
		msg += fmt.Sprintf(" (retry after %s)", e.RetryAfter)
	}
	return msg
}

// ParseRetryAfter reads an HTTP Retry-After header (seconds or a date);
// 0 when it says nothing usable.
func ParseRetryAfter(v string) time.Duration {
	if n, err := strconv.Atoi(v); err == nil && n >= 0 {
		return time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0)
	}
	return 0
}

// Config configures a Provider.
type Config struct {
	Service Service
	// Driver is how pairbench's driver drives the service's browsers
	// (driver.Connect): the run's WebMCP mode, its start, parse and load
	// bounds; its Log is Log when nil.
	Driver driver.Config
	// TempDir holds the DevTools relays' sockets; /tmp when empty.
	TempDir string
	// Log receives the provider's diagnostics; slog.Default() when nil.
	Log *slog.Logger
	// CreateTimeout bounds one create (default 90s); DeleteTimeout one
	// delete (default 20s).
	CreateTimeout, DeleteTimeout time.Duration
	// QuotaWait is how long Open holds back after a quota answer that did
	// not say (default 5s); MaxQuotaWait caps what a service may ask
	// (default 60s).
	QuotaWait, MaxQuotaWait time.Duration
}

// Provider opens browsers of one service. It implements runner.Browsers.
type Provider struct {
	cfg Config

	mu     sync.Mutex
	closed bool
	// live are the browsers created and not yet deleted, by ID; failed
	// are those whose delete failed, each with its last error.
	live   map[string]Session
	failed map[string]error
	// notBefore is when the next create may start, after a quota answer.
	notBefore time.Time
	retrying  bool
	// work counts creates under way, deletes of browsers nobody took, and
	// retries of failed deletes: Close waits for them.
	work sync.WaitGroup
}

var _ runner.Browsers = (*Provider)(nil)

// New checks cfg and returns a provider.
func New(cfg Config) (*Provider, error) {
	if cfg.Service == nil {
		return nil, errors.New("remote browsers: a service is needed")
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.Driver.Log == nil {
		cfg.Driver.Log = cfg.Log
	}
	if cfg.TempDir == "" {
		cfg.TempDir = os.TempDir()
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&cfg.CreateTimeout, 90*time.Second)
	def(&cfg.DeleteTimeout, 20*time.Second)
	def(&cfg.QuotaWait, 5*time.Second)
	def(&cfg.MaxQuotaWait, time.Minute)
	return &Provider{cfg: cfg, live: map[string]Session{}, failed: map[string]error{}}, nil
}

// errClosed is Open's error once Close has begun.
var errClosed = errors.New("the browser provider is closed")

// Open creates a browser, connects to it and starts its DevTools relay.
// When ctx ends while the service is still creating it, Open returns and
// the browser is deleted once it exists.
func (p *Provider) Open(ctx context.Context, spec runner.BrowserSpec) (runner.Browser, error) {
	name := p.cfg.Service.Name()
	p.retryFailed()
	if err := p.holdBack(ctx); err != nil {
		return nil, err
	}
	s, err := p.create(ctx, spec)
	if err != nil {
		return nil, fmt.Errorf("%s: create a browser: %w", name, err)
	}
	b, err := p.attach(ctx, s)
	if err != nil {
		if derr := p.release(s); derr != nil {
			err = fmt.Errorf("%w (and deleting it: %v)", err, derr)
		}
		return nil, fmt.Errorf("%s: browser %s: %w", name, s.ID, err)
	}
	return b, nil
}

// holdBack waits until a quota answer's wait has passed, or ctx ends.
func (p *Provider) holdBack(ctx context.Context) error {
	p.mu.Lock()
	wait := time.Until(p.notBefore)
	p.mu.Unlock()
	if wait <= 0 {
		return nil
	}
	p.cfg.Log.Info("waiting for the browser service's quota", "service", p.cfg.Service.Name(), "wait", wait.Round(time.Millisecond))
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// created is a create's outcome.
type created struct {
	s   Session
	err error
}

// create runs the service's create on its own goroutine, bounded by
// CreateTimeout and not by ctx: when ctx ends first, the browser is deleted
// once the service returns it.
func (p *Provider) create(ctx context.Context, spec runner.BrowserSpec) (Session, error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return Session{}, errClosed
	}
	p.work.Add(1)
	p.mu.Unlock()
	done := make(chan created, 1)
	var (
		mu        sync.Mutex // orders the hand-over against abandoning it
		abandoned bool
	)
	go func() {
		defer p.work.Done()
		cctx, cancel := context.WithTimeout(context.Background(), p.cfg.CreateTimeout)
		s, err := p.cfg.Service.Create(cctx, spec)
		cancel()
		p.noteQuota(err)
		if err != nil {
			done <- created{err: err}
			return
		}
		p.track(s)
		mu.Lock()
		if !abandoned && !p.isClosed() {
			done <- created{s: s}
			mu.Unlock()
			return
		}
		mu.Unlock()
		p.cfg.Log.Info("deleting a browser created after its trial stopped waiting", "service", p.cfg.Service.Name(), "browser", s.ID)
		p.release(s)
		done <- created{err: errClosed} // buffered: read only if Open still waits
	}()
	select {
	case c := <-done:
		return c.s, c.err
	case <-ctx.Done():
		mu.Lock()
		abandoned = true
		var taken *created
		select {
		case c := <-done:
			taken = &c
		default:
		}
		mu.Unlock()
		if taken != nil && taken.err == nil {
			p.release(taken.s)
		}
		return Session{}, context.Cause(ctx)
	}
}

// noteQuota holds back the next creates after a quota answer.
func (p *Provider) noteQuota(err error) {
	var q *QuotaError
	if !errors.As(err, &q) {
		return
	}
	wait := q.RetryAfter
	if wait <= 0 {
		wait = p.cfg.QuotaWait
	}
	wait = min(wait, p.cfg.MaxQuotaWait)
	p.mu.Lock()
	if t := time.Now().Add(wait); t.After(p.notBefore) {
		p.notBefore = t
	}
	p.mu.Unlock()
}

// attach connects the driver to s and starts the agent's relay.
func (p *Provider) attach(ctx context.Context, s Session) (*Browser, error) {
	d, err := driver.Connect(ctx, p.cfg.Driver, s.CDPURL)
	if err != nil {
		return nil, fmt.Errorf("connect over CDP: %w", err)
	}
	r, err := startRelay(p.cfg.TempDir, s.CDPURL, p.cfg.Log)
	if err != nil {
		d.Close(context.WithoutCancel(ctx))
		return nil, err
	}
	b := &Browser{driven: d, p: p, s: s, relay: r}
	b.stopWatch = context.AfterFunc(ctx, func() { b.Close(context.Background()) })
	return b, nil
}

func (p *Provider) isClosed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.closed
}

func (p *Provider) track(s Session) {
	p.mu.Lock()
	p.live[s.ID] = s
	p.mu.Unlock()
}

// release deletes s, bounded by DeleteTimeout. A delete that fails leaves
// s tracked as failed, to be retried.
func (p *Provider) release(s Session) error {
	ctx, cancel := context.WithTimeout(context.Background(), p.cfg.DeleteTimeout)
	defer cancel()
	err := p.cfg.Service.Delete(ctx, s)
	p.mu.Lock()
	defer p.mu.Unlock()
	if err != nil {
		p.failed[s.ID] = err
		p.cfg.Log.Warn("could not delete a browser; it stays tracked and is retried", "service", p.cfg.Service.Name(),
			"browser", s.ID, "err", err)
		return fmt.Errorf("delete browser %s: %w", s.ID, err)
	}
	delete(p.live, s.ID)
	delete(p.failed, s.ID)
	return nil
}

// retryFailed retries, in the background, the deletes that failed.
func (p *Provider) retryFailed() {
	p.mu.Lock()
	if p.retrying || p.closed || len(p.failed) == 0 {
		p.mu.Unlock()
		return
	}
	p.retrying = true
	todo := p.failedSessions()
	p.work.Add(1)
	p.mu.Unlock()
	go func() {
		defer p.work.Done()
		for _, s := range todo {
			if p.release(s) == nil {
				p.cfg.Log.Info("deleted a browser whose delete had failed", "service", p.cfg.Service.Name(), "browser", s.ID)
			}
		}
		p.mu.Lock()
		p.retrying = false
		p.mu.Unlock()
	}()
}

// failedSessions are the browsers whose delete failed, by ID; p.mu held.
func (p *Provider) failedSessions() []Session {
	var ss []Session
	for _, id := range slices.Sorted(maps.Keys(p.failed)) {
		ss = append(ss, p.live[id])
	}
	return ss
}

// Live names the browsers created and not yet deleted, sorted.
func (p *Provider) Live() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Sorted(maps.Keys(p.live))
}

// Close shuts the provider down: no browser opens after it begins; it
// waits for the creates under way and deletes what they made, then retries
// every delete that failed, until ctx ends. It returns an error naming the
// browsers it could not delete (the service still bills them until they
// time out). Browsers Open returned stay the caller's: close them first.
func (p *Provider) Close(ctx context.Context) error {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	waited := make(chan struct{})
	go func() { p.work.Wait(); close(waited) }()
	select {
	case <-waited:
	case <-ctx.Done():
		return fmt.Errorf("%s: shut down with browser creates still under way: %w", p.cfg.Service.Name(), context.Cause(ctx))
	}
	for {
		p.mu.Lock()
		todo := p.failedSessions()
		p.mu.Unlock()
		if len(todo) == 0 {
			return nil
		}
		for _, s := range todo {
			p.release(s)
		}
		p.mu.Lock()
		left := len(p.failed)
		p.mu.Unlock()
		if left == 0 {
			return nil
		}
		select {
		case <-time.After(time.Second):
		case <-ctx.Done():
			p.mu.Lock()
			var ids []string
			for _, s := range p.failedSessions() {
				ids = append(ids, s.ID)
			}
			p.mu.Unlock()
			return fmt.Errorf("%s: could not delete browser(s) %s: %w", p.cfg.Service.Name(), strings.Join(ids, ", "),
				context.Cause(ctx))
		}
	}
}
