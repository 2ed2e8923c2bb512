package local

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/pairbench/pairbench/browser/driver"
	"github.com/pairbench/pairbench/runner"
	"github.com/pairbench/pairbench/sandbox"
)

// DevToolsPort is the port Chromium's DevTools server listens on inside the
// browser's sandbox, and the port the trial's agent reaches it on inside
// its own. Neither is a port of the host's network.
const DevToolsPort = 9222

// devtoolsSocket is the exposed DevTools socket's name in the browser's
// per-browser directory (its sandbox's HomeDir).
const devtoolsSocket = "devtools.sock"

// devToolsURL is the DevTools endpoint as the agent's processes reach it,
// on their own loopback: a CDP client (Playwright's connectOverCDP) reads
// the browser's websocket URL from its /json/version.
var devToolsURL = "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(DevToolsPort))

// process is one running Chromium, confined in a sandbox of its own with a
// web egress of its own. It is the driver's Process of the browser.
type process struct {
	egress *sandbox.Egress
	sb     *sandbox.Sandbox
	cmd    *sandbox.Cmd
	// guard is the agent's way to DevTools (see guard.go).
	guard *devToolsGuard
	// pipe is pairbench's own DevTools connection (--remote-debugging-pipe).
	pipe    *chromedp.PipeConn
	exited  chan struct{} // closed once the sandbox's command returned
	waitErr error         // valid once exited is closed
	stderr  *tailBuffer

	mu           sync.Mutex
	refusals     []runner.Refusal // the first MaxRefusals
	refusalCount int              // all of them

	stopOnce sync.Once
	stopErr  error
}

// startProcess starts Chromium in a fresh sandbox (its per-browser
// directory is the profile) behind a fresh web egress. pairbench's
// connection, the pipe, is usable at once. The agent's way in, the exposed
// socket (see Browser.DevTools), exists before Chromium starts: a client
// that connects before Chromium's DevTools server listens waits for it.
// ctx bounds the start only: the browser lives until stop.
func startProcess(ctx context.Context, cfg Config) (_ *process, err error) {
	p := &process{exited: make(chan struct{}), stderr: &tailBuffer{max: 4096}}
	defer func() {
		if err != nil {
			p.Stop()
		}
	}()
	// The egress and the sandbox outlive ctx (a spare is started under the
	// provider's context and handed to a trial): stop ends them.
	p.egress, err = sandbox.NewEgress(context.WithoutCancel(ctx), sandbox.EgressConfig{
		Web:      &sandbox.WebAccess{Hosts: cfg.Hosts},
		Resolver: cfg.Resolver,
		TempDir:  cfg.TempDir,
		Logger:   cfg.Log,
		OnDeny:   p.refused,
	})
	if err != nil {
		return nil, fmt.Errorf("chromium: egress: %w", err)
	}
	if p.sb, err = sandbox.New(ctx, cfg.policy(p.egress)); err != nil {
		return nil, fmt.Errorf("chromium: %w", err)
	}
	if p.guard, err = startGuard(cmp.Or(cfg.TempDir, os.TempDir()), filepath.Join(p.sb.Home(), devtoolsSocket), cfg.Log); err != nil {
		return nil, fmt.Errorf("chromium: %w", err)
	}

	// Chromium reads commands on its descriptor 3 and writes on 4.
	cmdR, cmdW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("chromium: devtools pipe: %w", err)
	}
	evR, evW, err := os.Pipe()
	if err != nil {
		cmdR.Close()
		cmdW.Close()
		return nil, fmt.Errorf("chromium: devtools pipe: %w", err)
	}
	p.pipe = chromedp.NewPipeConn(&boundedMessages{r: evR, limit: cfg.pipeMessageLimit()}, cmdW)
	p.cmd = p.sb.Command(context.WithoutCancel(ctx), cfg.ChromiumPath, cfg.args()...)
	p.cmd.Expose = []sandbox.Expose{{Name: devtoolsSocket, Port: DevToolsPort}}
	p.cmd.ExtraFiles = []*os.File{cmdR, evW}
	p.cmd.Stdout, p.cmd.Stderr = p.stderr, p.stderr
	err = p.cmd.Start()
	cmdR.Close()
	evW.Close()
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", cfg.ChromiumPath, err)
	}
	go func() {
		p.waitErr = p.cmd.Wait()
		close(p.exited)
	}()

	return p, nil
}

var _ driver.Process = (*process)(nil)

// StartErr is the error of a start that failed on the pipe with err: how
// Chromium exited, when it did, else err.
func (p *process) StartErr(err error) error {
	select {
	case <-p.exited:
	case <-time.After(2 * time.Second): // the pipe ends a moment before Wait returns
		return err
	}
	return fmt.Errorf("chromium exited before it answered (%v): %s", p.waitErr, p.stderr)
}

// profileDir is Chromium's profile directory (--user-data-dir) in HomeDir,
// a memory file system of at most profileSize bytes. A fresh profile's
// start writes a few megabytes, mostly its databases, which on a disk are
// journalled and synced again and again: in memory the start takes about
// 15% less CPU. The profile lives as long as the browser, as before.
const (
	profileDir  = "profile"
	profileSize = 1 << 30
)

// policy is the browser's sandbox: no workspace (the per-browser directory,
// with the profile in memory inside it, is the only writable place),
// Chromium's policy file, the fonts' configuration and cache, user
// namespaces for Chromium's own sandbox, and e as the only way out.
func (c Config) policy(e *sandbox.Egress) sandbox.Policy {
	p := sandbox.Policy{
		NoWorkspace:         true,
		AllowUserNamespaces: true,
		MemoryDirs:          map[string]int64{profileDir: profileSize},
		Files:               c.policyFiles(),
		Egress:              e,
		TempRoot:            c.TempDir,
		Bwrap:               c.Bwrap,
		Executable:          c.Executable,
	}
	p.Files[noModelsPath] = "{}" // no on-device models (see noModelsPath)
	// The fonts' configuration, and the system's font cache: without it
	// fontconfig scans every font again at each browser's start.
	for _, dir := range []string{"/etc/fonts", "/var/cache/fontconfig"} {
		if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
			p.ReadOnly = append(p.ReadOnly, dir)
		}
	}
	if !strings.HasPrefix(c.ChromiumPath, "/usr/") {
		// A Chromium installed elsewhere: its own directory, read-only.
		p.ReadOnly = append(p.ReadOnly, filepath.Dir(c.ChromiumPath))
	}
	return p
}

// devToolsAnswers asks Chromium's DevTools server for its version through
// the exposed socket, the agent's way in, and returns its browser target's
// path (/devtools/browser/<id>).
func (p *process) devToolsAnswers(ctx context.Context) (string, error) {
	socket := filepath.Join(p.sb.Home(), devtoolsSocket)
	client := &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return sandbox.DialUnix(ctx, socket)
		},
		DisableKeepAlives: true,
	}}
	return browserPath(ctx, client, devToolsURL+"/json/version")
}

// browserPath reads the browser target's path from DevTools' /json/version.
func browserPath(ctx context.Context, client *http.Client, version string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, version, nil)
	if err != nil {
		return "", err
	}
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var v struct {
		URL string `json:"webSocketDebuggerUrl"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		return "", err
	}
	_, path, ok := strings.Cut(strings.TrimPrefix(v.URL, "ws://"), "/")
	if !ok || !strings.HasPrefix(path, "devtools/browser/") {
		return "", fmt.Errorf("unexpected DevTools URL %q", v.URL)
	}
	return "/" + path, nil
}

// MaxRefusals is how many of a browser's egress refusals are kept: a page
// can make them by the thousand a second, and the first show what the site
// needed. All are counted.
const MaxRefusals = 1000

// refused records a refusal of the browser's egress.
func (p *process) refused(d *sandbox.DeniedError) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.refusalCount++
	if len(p.refusals) < MaxRefusals {
		p.refusals = append(p.refusals, runner.Refusal{At: time.Now().UTC(), Host: d.Host, Port: d.Port, Reason: d.Reason})
	}
}

// Refusals returns the refusals kept so far, oldest first, and how many
// there were in all.
func (p *process) Refusals() ([]runner.Refusal, int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.refusals), p.refusalCount
}

// exitErr says how Chromium exited, once it has.
func (p *process) exitErr() error {
	select {
	case <-p.exited:
		return fmt.Errorf("chromium exited (%v): %s", p.waitErr, p.stderr)
	default:
		return nil
	}
}

// DevTools returns the agent's way to the browser: Chromium's DevTools
// server listens on DevToolsPort inside the browser's own network
// namespace, which no process outside reaches; the browser's sandbox
// exposes it on a unix socket in the per-browser directory, which only the
// DevTools guard dials (guard.go). The guard's own socket, in a directory
// only the launcher enters, is what the trial's agent sandbox relays to
// DevToolsPort of its own loopback.
func (p *process) DevTools() runner.DevTools {
	return runner.DevTools{
		URL:    devToolsURL,
		Socket: p.guard.socket(),
		Port:   DevToolsPort,
	}
}

// Stop kills every process of the browser's sandbox, waits for them, and
// removes its per-browser directory and its egress. It is safe to call more
// than once.
func (p *process) Stop() error {
	p.stopOnce.Do(func() {
		var errs []error
		if p.guard != nil {
			errs = append(errs, p.guard.close())
		}
		if p.sb != nil {
			errs = append(errs, p.sb.Close())
		}
		if p.cmd != nil && p.cmd.Pid() != 0 {
			<-p.exited
		}
		if p.pipe != nil {
			p.pipe.Close()
		}
		if p.egress != nil {
			errs = append(errs, p.egress.Close())
		}
		if err := errors.Join(errs...); err != nil {
			p.stopErr = fmt.Errorf("stop chromium: %w", err)
		}
	})
	return p.stopErr
}

// tailBuffer keeps the last max bytes written to it, for error messages.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
	max int
}

func (t *tailBuffer) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, b...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = t.buf[over:]
	}
	return len(b), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(bytes.TrimSpace(t.buf))
}
