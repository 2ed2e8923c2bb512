package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/rundir"

	"github.com/pairbench/pairbench/browser/cdp"
	"github.com/pairbench/pairbench/browser/driver"
	"github.com/pairbench/pairbench/browser/kernel"
	"github.com/pairbench/pairbench/browser/local"
	"github.com/pairbench/pairbench/browser/remote"
	"github.com/pairbench/pairbench/runner"
)

// The browser providers Browsers.Provider names.
const (
	BrowserLocal  = "local"
	BrowserKernel = "kernel"
	BrowserCDP    = "cdp"
)

// KernelAPI is Kernel's API, the default of Browsers.Kernel.BaseURL.
const KernelAPI = kernel.DefaultBaseURL

// NativeWebMCPSwitch is the Chromium switch --webmcp native starts the
// local browsers with.
const NativeWebMCPSwitch = local.NativeSwitch

// BrowserProviders names the providers, for flags and messages.
var BrowserProviders = []string{BrowserLocal, BrowserKernel, BrowserCDP}

// Browsers configures where the trials' browsers run. Both arms of every
// pair use the same.
type Browsers struct {
	// Provider is BrowserLocal ("" too), BrowserKernel or BrowserCDP.
	Provider string
	// Stealth asks every browser for the provider's anti-bot measures
	// (Kernel's stealth mode; {stealth} in a cdp configuration). The local
	// provider has none.
	Stealth bool
	// Kernel configures Kernel's browsers; its APIKey is a host secret
	// (kernel.KeyEnv) that reaches Kernel's API only.
	Kernel kernel.Config
	// CDP configures a service that hands out CDP websocket URLs.
	CDP cdp.Config
	// WebMCP is whose WebMCP the trials use, in both arms (--webmcp):
	// pairbench.WebMCPPolyfill, injected into each page, or
	// pairbench.WebMCPNative, the browser's own (docs/browsers.md). ""
	// is a fresh run's polyfill, a resumed run's own; the plan records it.
	WebMCP pairbench.WebMCPImpl
}

// remote reports whether the browsers run elsewhere than this machine.
func (b Browsers) remote() bool { return b.Provider == BrowserKernel || b.Provider == BrowserCDP }

// Check refuses a configuration no provider can run, before anything is
// planned.
func (b Browsers) Check(cfg Config) error {
	if !slices.Contains(BrowserProviders, b.Provider) && b.Provider != "" {
		return fmt.Errorf("--browser %q: want one of %v", b.Provider, BrowserProviders)
	}
	if !b.WebMCP.Valid() {
		return fmt.Errorf("--webmcp %q: want %s (the default) or %s", b.WebMCP, pairbench.WebMCPPolyfill, pairbench.WebMCPNative)
	}
	if !b.remote() {
		if b.Stealth {
			return errors.New("--stealth needs a cloud browser (--browser kernel or cdp): the local browser has no stealth mode")
		}
		return nil
	}
	if cfg.ExampleSites || len(cfg.Hosts) > 0 {
		return fmt.Errorf("--browser %s: a cloud browser cannot reach sites served on this machine's loopback (--example-sites, --host)", b.Provider)
	}
	_, err := b.service()
	return err
}

// service is the remote provider's service.
func (b Browsers) service() (remote.Service, error) {
	if b.Provider == BrowserKernel {
		return kernel.New(b.Kernel)
	}
	return cdp.New(b.CDP)
}

// policy is what run.json records of the browsers.
func (r *Run) browserPolicy() rundir.BrowserPolicy {
	b := r.cfg.Browser
	if !b.remote() {
		return r.browserConfig().Policy()
	}
	name := b.Provider
	if b.Provider == BrowserCDP && b.CDP.Name != "" {
		name += ": " + b.CDP.Name
	}
	return rundir.BrowserPolicy{
		Provider: name,
		Sandbox:  "the service's",
		Egress:   rundir.BrowserEgress{Never: "set by the service, not by pairbench"},
		DevTools: "a websocket to pairbench; to the trial's agent sandbox only through a unix-socket relay on this host (the service's URL and keys stay here)",
		Writable: "the service's",
		Stealth:  b.Stealth,
	}
}

// remoteShutdown bounds the wait, at Close, for browser creates under way
// and for failed deletes to be retried.
const remoteShutdown = time.Minute

// startBrowsers starts the trials' browser provider.
func (r *Run) startBrowsers() (runner.Browsers, error) {
	b := r.cfg.Browser
	if !b.remote() {
		// One spare browser per slot: each trial's Chromium starts while
		// the slot's previous trial runs.
		cfg := r.browserConfig()
		cfg.WebMCP = r.plan.WebMCPMode()
		p, err := local.New(cfg)
		if err != nil {
			return nil, err
		}
		r.onClose(func() error { p.Close(); return nil })
		return p, nil
	}
	svc, err := b.service()
	if err != nil {
		return nil, err
	}
	p, err := remote.New(remote.Config{Service: svc, Driver: driver.Config{WebMCP: r.plan.WebMCPMode()}, TempDir: r.cfg.TempDir, Log: r.log})
	if err != nil {
		return nil, err
	}
	r.onClose(func() error {
		ctx, cancel := context.WithTimeout(context.Background(), remoteShutdown)
		defer cancel()
		return p.Close(ctx)
	})
	return p, nil
}

// FromHost completes b from the host: Kernel's API key from
// kernel.KeyEnv, and with cdpConfig (a JSON file, see cdp.Config) the cdp
// service's configuration, its secret from the variable it names. The keys
// stay in this process: no sandbox gets them.
func (b *Browsers) FromHost(getenv func(string) string, cdpConfig string) error {
	switch b.Provider {
	case BrowserKernel:
		if b.Kernel.APIKey == "" {
			b.Kernel.APIKey = getenv(kernel.KeyEnv)
		}
	case BrowserCDP:
		if cdpConfig == "" {
			return errors.New("--browser cdp needs --cdp-config FILE (docs/browsers.md)")
		}
		raw, err := os.ReadFile(cdpConfig)
		if err != nil {
			return fmt.Errorf("--cdp-config: %w", err)
		}
		if b.CDP, err = cdp.ParseConfig(raw); err != nil {
			return fmt.Errorf("--cdp-config %s: %w", cdpConfig, err)
		}
		if b.CDP.SecretEnv != "" {
			b.CDP.Secret = getenv(b.CDP.SecretEnv)
		}
	default:
		if cdpConfig != "" {
			return errors.New("--cdp-config is for --browser cdp")
		}
	}
	return nil
}
