package driver

import (
	"context"
	"crypto/x509"
	"log/slog"
	"net/netip"
	"time"

	"github.com/pairbench/pairbench"
)

// Config configures the driver of one browser. The zero value of every
// field is a usable default.
type Config struct {
	// WebMCP is whose WebMCP treatment registers its tools with and the
	// agent's webmcp tool lists and invokes through: the pinned polyfill
	// (pairbench.WebMCPPolyfill, or ""), injected into the page, or the
	// browser's own (pairbench.WebMCPNative: nothing injected but the
	// tools, listing and invoking through the DevTools WebMCP domain; the
	// browser must have been started with its WebMCP on).
	WebMCP pairbench.WebMCPImpl
	// Switches are the switches the run added to the browser's command
	// line, as WebMCPEnv reports them.
	Switches []string
	// Hosts, CACerts and Resolver are the browser's host mappings
	// ("127.0.0.1:PORT" by host name), the certificate authorities it
	// trusts beyond the system's, and the resolver of the names it asks
	// for (nil: the system's): the diagnosis of a start page that did not
	// load looks from this host as the browser reaches the site.
	Hosts    map[string]string
	CACerts  []*x509.Certificate
	Resolver Resolver
	// StartTimeout bounds the wait for the browser's first tab (and
	// Connect's dial) (default 10s).
	StartTimeout time.Duration
	// ParseTimeout bounds each navigation of the start page until the page
	// is parsed (readyState leaves "loading"); a first navigation that runs
	// out is made once more (default 15s).
	ParseTimeout time.Duration
	// LoadTimeout bounds the wait from parse to a complete load (default 15s).
	LoadTimeout time.Duration
	// Log receives the driver's diagnostics; slog.Default() when nil.
	Log *slog.Logger
	// Now is the clock LoadInfo.LoadedAt is read from; time.Now when nil.
	Now func() time.Time
}

// Resolver resolves host names (sandbox.Resolver has the same method).
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// setDefaults fills in the timeouts, the log and the clock.
func (c *Config) setDefaults() {
	if c.StartTimeout <= 0 {
		c.StartTimeout = 10 * time.Second
	}
	if c.ParseTimeout <= 0 {
		c.ParseTimeout = 15 * time.Second
	}
	if c.LoadTimeout <= 0 {
		c.LoadTimeout = 15 * time.Second
	}
	if c.Log == nil {
		c.Log = slog.Default()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
}

// native reports whether c asks for the browser's own WebMCP.
func (c Config) native() bool { return c.WebMCP == pairbench.WebMCPNative }
