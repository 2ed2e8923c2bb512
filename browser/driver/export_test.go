package driver

import (
	"crypto/x509"
	"log/slog"
	"testing"
	"time"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/runner"
)

// This package's tests drive real Chromium, which the local provider
// starts and confines; it imports this package, so these tests cannot
// import it. Its external test file (local_test.go, package driver_test)
// sets these hooks to it before any test runs.
var (
	// NewLocal returns a local provider configured as cfg says.
	NewLocal func(t testing.TB, cfg LocalConfig) runner.Browsers
	// Driven returns the driver of a browser NewLocal's providers opened.
	Driven func(runner.Browser) *Browser
	// ReadCACerts reads a PEM bundle as the local provider does.
	ReadCACerts func(path string) ([]*x509.Certificate, error)
	// DevToolsOnLoopback relays a loopback port of the test's to the
	// browser's DevTools, as the agent reaches it, and returns the
	// browser's websocket URL there.
	DevToolsOnLoopback func(t testing.TB, b runner.Browser) string
)

// LocalConfig holds the fields of the local provider's Config these tests
// set, by the same names.
type LocalConfig struct {
	Hosts                                   map[string]string
	Resolver                                Resolver
	TempDir, Executable                     string
	Flags                                   []string
	WebMCP                                  pairbench.WebMCPImpl
	CACerts                                 []*x509.Certificate
	StartTimeout, ParseTimeout, LoadTimeout time.Duration
	Log                                     *slog.Logger
}
