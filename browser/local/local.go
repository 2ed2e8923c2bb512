// Package local is the browser provider that runs Debian's Chromium on this
// machine, one fresh headless browser and profile per trial, confined, and
// hands pairbench's driver (package driver) its DevTools pipe.
//
// # Confinement
//
// Every browser, spares included, runs in a sandbox of its own (package
// sandbox): a user that is not the host's root, its own mount namespace
// with /usr, a few /etc files, the fonts' configuration and its profile
// (the per-browser directory, the only writable place) and nothing else of
// the host, its own PID namespace, a fresh minimal environment, and its own
// network namespace whose only way out is a web egress of its own
// (sandbox.WebAccess: public http and https, the mapped hosts, never a
// loopback, private, link-local or other non-public address; every
// refusal is kept for the trial's row). Chromium's own sandbox runs inside
// it: user namespaces are allowed to the browser's sandbox for it, and its
// renderers run under its seccomp filter on top of the sandbox's.
// Chromium's mandatory policy (policy.go) refuses file:, chrome:,
// devtools:, view-source: and the like, and every download.
//
// DevTools: pairbench's own connection is a pipe (--remote-debugging-pipe)
// only it holds. The agent's is Chromium's DevTools server inside the
// browser's network namespace, exposed as a unix socket in the per-browser
// directory that only the DevTools guard dials (guard.go), whose own
// socket only the trial's agent sandbox gets relayed (Browser.DevTools):
// no TCP port on the host serves it. The guard reads every command and
// keeps downloads denied (the download commands reach Chromium as "deny")
// and refuses the commands that load code.
//
// The browser it hands out is pairbench's driver (package driver) over
// the pipe: tool registration, loads, live tools and invocations are the
// driver's, the same for a cloud browser.
package local

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/netip"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/browser/driver"
	"github.com/pairbench/pairbench/runner"
	"github.com/pairbench/pairbench/sandbox"
)

// DefaultChromiumPath is Debian's Chromium binary. (/usr/bin/chromium is a
// wrapper script that misbehaves when started headless.)
const DefaultChromiumPath = "/usr/lib/chromium/chromium"

// Config configures the provider. The zero value of every field but Log and
// Now is a usable default.
type Config struct {
	// ChromiumPath is the Chromium binary; DefaultChromiumPath when empty.
	ChromiumPath string
	// Hosts maps host names to "127.0.0.1:PORT": the browser's egress dials
	// that address for each host, so registry URLs such as
	// http://books.example/ reach pairbench's example sites. Each mapped
	// host's http origin is also treated as a secure context, which WebMCP
	// needs, as it would be over https on the real web. Mapped hosts are
	// the only destinations that may be on this host.
	Hosts map[string]string
	// CACerts are certificate authorities the browser trusts for the run
	// beyond the system's (a staging site's private CA): ReadCACerts reads
	// them from a PEM bundle.
	CACerts []*x509.Certificate
	// Resolver resolves the names the browser asks for, on the host; nil
	// means the system's (tests give their own, so no test asks real DNS).
	Resolver sandbox.Resolver
	// Bwrap is the bubblewrap binary and Executable pairbench's own binary
	// (the sandbox's init); empty means "bwrap" from PATH and
	// os.Executable().
	Bwrap, Executable string
	// Flags are extra Chromium command-line flags.
	Flags []string
	// WebMCP is whose WebMCP treatment registers its tools with and the
	// agent's webmcp tool lists and invokes through: the pinned polyfill
	// (pairbench.WebMCPPolyfill, or ""), injected into the page, or the
	// browser's own (pairbench.WebMCPNative: NativeSwitch on, nothing
	// injected but the tools, listing and invoking through the DevTools
	// WebMCP domain).
	WebMCP pairbench.WebMCPImpl
	// TempDir holds the per-browser directories (sandbox and egress); /tmp
	// when empty.
	TempDir string
	// StartTimeout bounds Chromium's start until its DevTools endpoint
	// listens (default 10s).
	StartTimeout time.Duration
	// ParseTimeout bounds each navigation of the start page until the page
	// is parsed (readyState leaves "loading"); a first navigation that runs
	// out is made once more (default 15s).
	ParseTimeout time.Duration
	// LoadTimeout bounds the wait from parse to a complete load (default 15s).
	LoadTimeout time.Duration
	// Log receives the provider's diagnostics; slog.Default() when nil.
	Log *slog.Logger
	// Now is the clock LoadInfo.LoadedAt is read from; time.Now when nil.
	Now func() time.Time
	// Spares is how many browsers the provider keeps started ahead of
	// Open; 0 starts every browser inside Open. A spare is as fresh as a
	// browser started in Open (its own empty profile, never shown a page,
	// never handed out twice), only started earlier: Chromium's start and
	// its first renderer's start-up work, about a second of CPU, then
	// happen while the previous trial runs instead of inside the next
	// trial's setup. Each idle spare holds a few hundred MB of memory.
	// With spares, Close the provider to stop them.
	Spares int

	// pipeLimit is DefaultPipeMessageLimit when 0; tests lower it.
	pipeLimit int
}

// pipeMessageLimit bounds one message Chromium writes on pairbench's pipe.
func (c Config) pipeMessageLimit() int {
	if c.pipeLimit > 0 {
		return c.pipeLimit
	}
	return DefaultPipeMessageLimit
}

// Provider opens local Chromium browsers. It implements runner.Browsers.
type Provider struct {
	cfg Config

	// With spares, started() runs one worker per spare, each keeping one
	// started browser (or the error starting it) in ready until Open
	// takes it. life ends at Close.
	started func()
	ready   chan opened
	life    context.Context
	stop    context.CancelFunc
	workers sync.WaitGroup
}

// Browser is one Chromium the provider started: pairbench's driver over
// its pipe, and the confined process behind it.
type Browser struct {
	*driver.Browser
	proc *process
}

// open starts a confined Chromium as cfg configures it and drives it.
func open(ctx context.Context, cfg Config) (*Browser, error) {
	proc, err := startProcess(ctx, cfg)
	if err != nil {
		return nil, err
	}
	d, err := driver.New(ctx, cfg.driverConfig(), proc, proc.pipe)
	if err != nil {
		return nil, err
	}
	return &Browser{Browser: d, proc: proc}, nil
}

// driverConfig is what the driver of a browser started with c is given.
func (c Config) driverConfig() driver.Config {
	return driver.Config{
		WebMCP:       c.WebMCP,
		Switches:     c.switches(),
		Hosts:        c.Hosts,
		CACerts:      c.CACerts,
		Resolver:     c.Resolver,
		StartTimeout: c.StartTimeout,
		ParseTimeout: c.ParseTimeout,
		LoadTimeout:  c.LoadTimeout,
		Log:          c.Log,
		Now:          c.Now,
	}
}

// opened is a spare browser, or why it could not be started.
type opened struct {
	b   *Browser
	err error
}

var _ runner.Browsers = (*Provider)(nil)

// New checks cfg and returns a provider. It fails when the Chromium binary
// does not exist or is not executable, so a misconfigured run stops before
// its first trial.
func New(cfg Config) (*Provider, error) {
	if cfg.ChromiumPath == "" {
		cfg.ChromiumPath = DefaultChromiumPath
	}
	fi, err := os.Stat(cfg.ChromiumPath)
	if err != nil {
		return nil, fmt.Errorf("chromium: %w", err)
	}
	// The path inside the sandbox is the real one: a link's target may be
	// elsewhere than the link.
	if cfg.ChromiumPath, err = filepath.EvalSymlinks(cfg.ChromiumPath); err == nil {
		cfg.ChromiumPath, err = filepath.Abs(cfg.ChromiumPath)
	}
	if err != nil {
		return nil, fmt.Errorf("chromium: %w", err)
	}
	if fi.IsDir() || fi.Mode().Perm()&0o111 == 0 {
		return nil, fmt.Errorf("chromium: %s is not an executable file", cfg.ChromiumPath)
	}
	if err := CheckBinary(cfg.ChromiumPath); err != nil {
		return nil, err
	}
	for host, addr := range cfg.Hosts {
		if _, err := netip.ParseAddrPort(addr); err != nil || host == "" || strings.ContainsAny(host, ", /:") {
			return nil, fmt.Errorf("chromium: bad host mapping %q -> %q: want a host name and IP:PORT", host, addr)
		}
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if !cfg.WebMCP.Valid() {
		return nil, fmt.Errorf("chromium: WebMCP %q: want %s or %s", cfg.WebMCP, pairbench.WebMCPPolyfill, pairbench.WebMCPNative)
	}
	if cfg.Spares < 0 {
		return nil, fmt.Errorf("chromium: %d spares", cfg.Spares)
	}
	for _, f := range cfg.Flags {
		name, _, _ := strings.Cut(f, "=")
		if slices.Contains(confinementFlags, name) {
			return nil, fmt.Errorf("chromium: flag %s would undo the browser's confinement", name)
		}
	}
	p := &Provider{cfg: cfg, ready: make(chan opened, cfg.Spares)}
	p.life, p.stop = context.WithCancel(context.Background())
	p.started = sync.OnceFunc(func() {
		for range cfg.Spares {
			p.workers.Go(p.keepSpare)
		}
	})
	return p, nil
}

// keepSpare starts a browser and offers it to Open, again and again, until
// the provider is closed. Once its browser is taken, it starts the next
// when the taker's agent is running or the taken browser closes, whichever
// comes first, so that a spare's start never competes with an agent's.
// A browser that cannot be started is offered as its error, after which
// the worker waits a moment before trying again.
func (p *Provider) keepSpare() {
	for p.life.Err() == nil {
		b, err := open(p.life, p.cfg)
		select {
		case p.ready <- opened{b, err}:
		case <-p.life.Done():
			if b != nil {
				b.Close(context.Background())
			}
			return
		}
		if err != nil {
			select {
			case <-time.After(time.Second):
			case <-p.life.Done():
			}
			continue
		}
		select {
		case <-b.Running():
		case <-p.life.Done():
		}
	}
}

// Close stops the spares: it closes every spare browser not yet handed out
// and waits for the workers. Browsers Open returned are the caller's and
// live on. Close is safe to call more than once.
func (p *Provider) Close() error {
	p.stop()
	p.workers.Wait()
	var errs []error
	for {
		select {
		case o := <-p.ready:
			if o.b != nil {
				errs = append(errs, o.b.Close(context.Background()))
			}
		default:
			return errors.Join(errs...)
		}
	}
}

// spare takes a started browser from the workers and binds its life to
// ctx. A spare that died while it waited is closed and the next one taken.
func (p *Provider) spare(ctx context.Context) (*Browser, error) {
	p.started()
	for {
		select {
		case o := <-p.ready:
			if o.err != nil {
				return nil, o.err
			}
			if o.b.Rebind(ctx) && o.b.proc.exitErr() == nil {
				return o.b, nil
			}
			p.cfg.Log.Warn("spare browser died while it waited; taking the next", "err", o.b.proc.exitErr())
			o.b.Close(context.Background())
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		case <-p.life.Done():
			return nil, errors.New("chromium: the provider is closed")
		}
	}
}

// ErrUnsupported is returned by Open for a BrowserSpec the local provider
// cannot honour (profiles and stealth belong to cloud providers).
var ErrUnsupported = errors.New("not supported by the local browser provider")

// Open starts a fresh Chromium on an empty profile and connects to it. The
// browser lives until Close or until ctx ends; either way its processes are
// killed and its profile directory removed.
func (p *Provider) Open(ctx context.Context, spec runner.BrowserSpec) (runner.Browser, error) {
	if spec.Profile != "" {
		return nil, fmt.Errorf("profile %q: %w", spec.Profile, ErrUnsupported)
	}
	if spec.Stealth {
		return nil, fmt.Errorf("stealth: %w", ErrUnsupported)
	}
	if p.cfg.Spares > 0 {
		return p.spare(ctx)
	}
	return open(ctx, p.cfg)
}

// args returns Chromium's command line inside its sandbox. There is no
// --no-sandbox: Chromium's own sandbox runs.
func (c Config) args() []string {
	args := []string{
		"--headless",
		"--disable-gpu",
		"--disable-quic",
		"--no-first-run",
		"--no-default-browser-check",
		"--disable-background-networking",
		"--disable-component-update",
		"--optimization-guide-manifest-override=" + noModelsPath,
		"--disable-sync",
		"--disable-dev-shm-usage",
		"--disable-extensions",
		"--disable-default-apps",
		"--disable-breakpad",
		"--password-store=basic",
		"--use-mock-keychain",
		"--mute-audio",
		// Chromium starts two zygotes at once: the sandboxed one, whose
		// start the browser process waits for (it must learn the
		// zygote's PID in its new PID namespace), and an unsandboxed one
		// for the few helpers that run without Chromium's sandbox. On a
		// busy machine the second takes half the CPU the first needs
		// while the browser waits; without it those helpers are started
		// directly, as unsandboxed as before.
		"--no-unsandboxed-zygote",
		// Tabs the agent opens land in their own windows; none may be
		// throttled as a background tab, in either arm.
		"--disable-background-timer-throttling",
		"--disable-backgrounding-occluded-windows",
		"--disable-renderer-backgrounding",
		// pairbench's connection on descriptors 3 and 4; the agent's on
		// the port inside the browser's network namespace.
		"--remote-debugging-pipe",
		"--remote-debugging-address=127.0.0.1",
		"--remote-debugging-port=" + strconv.Itoa(DevToolsPort),
		"--user-data-dir=" + path.Join(sandbox.HomeDir, profileDir),
		// Every request goes to the egress, loopback too (Chromium would
		// otherwise reach its own loopback directly, DevTools' port
		// included), and the egress resolves every name.
		"--proxy-server=http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(sandbox.DefaultProxyPort)),
		"--proxy-bypass-list=<-loopback>",
	}
	if len(c.Hosts) > 0 {
		var origins []string
		for _, host := range slices.Sorted(maps.Keys(c.Hosts)) {
			origins = append(origins, "http://"+host)
		}
		args = append(args, "--unsafely-treat-insecure-origin-as-secure="+strings.Join(origins, ","))
	}
	// Chromium keeps one value per switch, so a second --disable-features
	// would replace ours: a caller's list is merged into it instead.
	disabled := slices.Clone(disabledFeatures)
	for _, f := range c.switches() {
		if list, ok := strings.CutPrefix(f, "--disable-features="); ok {
			disabled = append(disabled, strings.Split(list, ",")...)
			continue
		}
		args = append(args, f)
	}
	args = append(args, "--disable-features="+strings.Join(disabled, ","))
	return append(args, "about:blank")
}

// NativeSwitch turns on Chromium's own WebMCP (document.modelContext and
// the tools its DevTools WebMCP domain lists and invokes); docs/browsers.md
// says what this Chromium does with it.
const NativeSwitch = "--enable-blink-features=WebMCP"

// switches are the switches the run added to pairbench's own: Flags, and
// NativeSwitch in native mode (what args gives Chromium).
func (c Config) switches() []string {
	out := slices.Clone(c.Flags)
	if c.WebMCP == pairbench.WebMCPNative && !slices.Contains(out, NativeSwitch) {
		out = append(out, NativeSwitch)
	}
	return out
}

// confinementFlags are the Chromium flags pairbench sets to confine the
// browser, or that would undo that confinement: Config.Flags may not hold
// them.
var confinementFlags = []string{
	"--no-sandbox", "--disable-setuid-sandbox", "--disable-namespace-sandbox", "--disable-seccomp-filter-sandbox",
	"--no-zygote", "--single-process", "--remote-debugging-pipe", "--remote-debugging-port",
	"--remote-debugging-address", "--remote-allow-origins", "--user-data-dir", "--proxy-server",
	"--proxy-bypass-list", "--proxy-pac-url", "--no-proxy-server", "--host-resolver-rules", "--host-rules",
	"--disable-web-security", "--allow-file-access-from-files", "--allow-file-access",
}

// disabledFeatures are Chromium features a headless trial browser turns
// off. Chromium 156 preloads the address bar's popup (a WebUI page) in a
// renderer of its own at start, headless or not: about a second of CPU in
// that renderer and a third of a second in the browser process, for a
// popup a headless browser never shows. No page can observe it.
//
// NetworkTimeServiceQuerying asks a Google server for the time at every
// start; a trial has no use for it.
var disabledFeatures = []string{"WebUIOmniboxPopup", "WebUIOmniboxAimPopup", "NetworkTimeServiceQuerying"}
