// Package launch holds what every agent adapter (agent/pi,
// claudecode, codex) shares: the model's one way out of the sandbox, the
// MCP servers started beside the agent, and one run of an agent's CLI under
// its caps, with its event stream folded into a runner.AgentResult and its
// transcript redacted.
package launch

import (
	"bytes"
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/rundir"
	"github.com/pairbench/pairbench/runner"
	"github.com/pairbench/pairbench/sandbox"
)

// Route is how an agent reaches its model: the egress rule for a model on
// the network, the loopback port to forward for one on this host (the
// scripted model), and the key the egress proxy holds back.
type Route struct {
	Allow   []sandbox.AllowRule
	Forward []int
	Secrets []sandbox.Secret
	// ModelPort is the model's loopback port when it runs on this host
	// (one of Forward), else ModelHost names its host: the model gate sits
	// in front of either.
	ModelPort int
	ModelHost string
}

// Network says how the egress proxy reaches a model that is not on the
// public web with a public certificate: a model host on a private network
// (resolved by Resolver, allowed to be loopback by LoopbackHosts) or
// behind a private CA (UpstreamRoots). The zero value is the public web.
// Tests use it for a TLS model stand-in on this host.
type Network struct {
	Resolver      sandbox.Resolver
	UpstreamRoots *x509.CertPool
	LoopbackHosts []string
}

// Key says where an agent's CLI takes its model key from and where it
// sends it.
type Key struct {
	// Env is the variable of the host's environment holding the key
	// (the model's KeyEnv wins); the CLI reads the placeholder from it.
	Env string
	// Headers are the request headers the CLI sends the key in: the
	// egress proxy swaps the placeholder in these alone and refuses a
	// request that carries it anywhere else (sandbox.Secret.Headers).
	// Empty means the sandbox's authorization headers.
	Headers []string
}

// ModelRoute returns m's route. host is the provider's API host, used when
// m has no base URL. A real model without its key fails; the scripted
// model takes any key.
func ModelRoute(m rundir.Model, host string, key Key, hostEnv []string) (Route, error) {
	var r Route
	port := 443
	if m.BaseURL != "" {
		u, err := url.Parse(m.BaseURL)
		if err != nil || u.Hostname() == "" {
			return r, fmt.Errorf("model base URL %q: want scheme://host[:port]/...", m.BaseURL)
		}
		host = u.Hostname()
		if u.Scheme == "http" {
			port = 80
		}
		if u.Port() != "" {
			port, _ = strconv.Atoi(u.Port())
		}
	}
	if host == "" {
		return r, fmt.Errorf("model %s: unknown provider %q; give a base URL", m, m.Provider)
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		// A model on this host is forwarded by port, like the browser;
		// the proxy allows 127.0.0.1:PORT for it.
		r.Forward = append(r.Forward, port)
		r.ModelPort = port
	} else {
		r.Allow = append(r.Allow, sandbox.AllowRule{Host: host, Ports: []int{port}})
		r.ModelHost = host
	}
	keyEnv := key.Env
	if m.KeyEnv != "" {
		keyEnv = m.KeyEnv
	}
	if v := Lookup(hostEnv, keyEnv); v != "" {
		r.Secrets = append(r.Secrets, sandbox.Secret{Name: keyEnv, Value: v, Hosts: []string{host}, Headers: key.Headers})
	} else if !m.Scripted {
		return r, fmt.Errorf("model %s: %s is not set", m, keyEnv)
	}
	return r, nil
}

// Lookup returns the last value of name in env ("" when unset).
func Lookup(env []string, name string) string {
	v := ""
	for _, kv := range env {
		if k, val, ok := strings.Cut(kv, "="); ok && k == name {
			v = val
		}
	}
	return v
}

// ScriptedKey is the key an agent is given for the scripted model, which
// takes any: CLIs refuse to start without one.
const ScriptedKey = "scripted-model-takes-any-key"

// BesideAgent turns every server with Listen set into a sandbox service
// started with the agent, and into the URL the agent connects to: a port
// of the sandbox's loopback that the init holds from the start and relays
// to Listen once the server is up. taken are the ports the egress relay
// already holds inside.
func BesideAgent(servers []runner.MCPServer, taken []int) ([]runner.MCPServer, []sandbox.Service) {
	used := map[int]bool{sandbox.DefaultProxyPort: true}
	for _, p := range taken {
		used[p] = true
	}
	for _, s := range servers {
		if s.Listen != 0 {
			used[s.Listen] = true
		}
	}
	var out []runner.MCPServer
	var services []sandbox.Service
	for _, s := range servers {
		if s.Listen == 0 {
			out = append(out, s)
			continue
		}
		port := s.Listen + 1
		for used[port] {
			port++
		}
		used[port] = true
		services = append(services, sandbox.Service{
			Args: append([]string{s.Command}, s.Args...), Port: port, Backend: s.Listen,
		})
		out = append(out, runner.MCPServer{Name: s.Name, URL: fmt.Sprintf("http://127.0.0.1:%d/mcp", port)})
	}
	return out, services
}

// Stream folds an agent's event stream into a result as it is read,
// checking the turn and spend caps as it goes.
type Stream interface {
	// Feed reads events until EOF or a cap is hit, and returns the cap
	// hit ("" if none).
	Feed(r io.Reader) (pairbench.Cap, error)
	// Result returns what the stream has shown so far.
	Result() runner.AgentResult
}

// Launch is one run of an agent's CLI, as Run starts it.
type Launch struct {
	// Name names the agent in errors ("claude-code").
	Name string
	Task runner.AgentTask
	// Route is the model's way out; Policy returns the sandbox for the
	// egress and environment Run builds.
	Route  Route
	Policy func(egress *sandbox.Egress, env map[string]string) sandbox.Policy
	// Env is the agent's own environment, beside the provider's variables
	// sandbox.AgentEnv passes and the egress proxy's.
	Env map[string]string
	// HostEnv is where provider variables are read from.
	HostEnv []string
	// Network is how the egress proxy reaches the model's host.
	Network Network
	// Configure writes the agent's configuration into the sandbox's home
	// (a fresh directory, seen inside as sandbox.HomeDir) for the MCP
	// servers it connects to, and returns the command line.
	Configure func(home string, servers []runner.MCPServer) (argv []string, err error)
	// Stream parses the CLI's stdout into the result; the transcript
	// writer it is given redacts every secret. The stream calls meter.Turn
	// as each model turn ends, with the run's cost so far: the model gate
	// reads it to stop the agent before a turn that would pass a cap.
	Stream func(transcript io.Writer, meter *Meter) Stream
	// Steps returns a fresh decoder of the records the stream writes to
	// the transcript: Run writes their steps to Task.StepsPath.
	Steps func() Decoder
	// Diagnostics, when set, reads the CLI's stderr and writes what to keep
	// to keep (its tail, redacted, is the result's Stderr). It returns the
	// cap what it read hit, if any: the agent is then killed.
	Diagnostics func(stderr io.Reader, keep io.Writer) pairbench.Cap
	TempRoot    string
	Log         *slog.Logger
}

// Run runs l inside a fresh sandbox whose only ways out are the model's host
// (through the egress proxy, the key swapped in there), the task's
// loopback ports and its sockets (the browser's DevTools). It enforces the caps from outside: every model request
// passes the model gate, which kills the agent instead of sending the
// request that would take a turn past the turn cap, or a turn as dear as
// the dearest so far past the spend cap; the stream kills it on a cap it
// reads. It writes the transcript to l.Task.TranscriptPath. Every secret is
// redacted from what it keeps: the transcript, and every text of the result
// (the answer, the error, the diagnostics, the tool names), whatever the
// agent printed.
func Run(ctx context.Context, l Launch) (runner.AgentResult, error) {
	task := l.Task
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var mu sync.Mutex
	var capHit pairbench.Cap
	hit := func(c pairbench.Cap) {
		if c == "" {
			return
		}
		mu.Lock()
		if capHit == "" {
			capHit = c
		}
		mu.Unlock()
		cancel() // kill the agent; the sandbox ends every process inside
	}
	meter := NewMeter()
	g := &gate{caps: task.Caps, meter: meter, stop: hit}

	ecfg := sandbox.EgressConfig{Allow: l.Route.Allow, Secrets: l.Route.Secrets, ForwardSockets: maps.Clone(task.Sockets),
		Resolver: l.Network.Resolver, UpstreamRoots: l.Network.UpstreamRoots, AllowLoopbackHosts: l.Network.LoopbackHosts,
		TempDir: l.TempRoot, Logger: l.Log}
	for _, p := range append(append([]int(nil), l.Route.Forward...), task.LoopbackPorts...) {
		if p != l.Route.ModelPort || p == 0 {
			ecfg.ForwardPorts = append(ecfg.ForwardPorts, p)
		}
	}
	if l.Route.ModelPort != 0 {
		// The model on this host is reached through the gate: the
		// sandbox's port relays to it, and it to the model.
		sock, stop, err := serveGate(l.TempRoot, l.Route.ModelPort, g)
		if err != nil {
			return runner.AgentResult{}, fmt.Errorf("%s: model gate: %w", l.Name, err)
		}
		defer stop()
		if ecfg.ForwardSockets == nil {
			ecfg.ForwardSockets = map[int]string{}
		}
		ecfg.ForwardSockets[l.Route.ModelPort] = sock
	}
	if host := l.Route.ModelHost; host != "" {
		ecfg.Upstream = func(rt http.RoundTripper) http.RoundTripper { return g.forHost(host, rt) }
	}
	forward := ecfg.ForwardPorts
	if l.Route.ModelPort != 0 {
		forward = append(slices.Clone(forward), l.Route.ModelPort)
	}
	egress, err := sandbox.NewEgress(ctx, ecfg)
	if err != nil {
		return runner.AgentResult{}, fmt.Errorf("%s: egress: %w", l.Name, err)
	}
	defer egress.Close()

	env := sandbox.AgentEnv(l.HostEnv, task.Model.String())
	for k, v := range l.Env {
		env[k] = v
	}
	sb, err := sandbox.New(ctx, l.Policy(egress, env))
	if err != nil {
		return runner.AgentResult{}, fmt.Errorf("%s: %w", l.Name, err)
	}
	defer func() {
		if err := sb.Close(); err != nil && l.Log != nil {
			l.Log.Warn("sandbox not cleaned up", "agent", l.Name, "err", err)
		}
	}()
	taken := slices.Clone(forward)
	for port := range task.Sockets {
		taken = append(taken, port)
	}
	servers, services := BesideAgent(task.MCPServers, taken)
	argv, err := l.Configure(sb.Home(), servers)
	if err != nil {
		return runner.AgentResult{}, fmt.Errorf("%s: %w", l.Name, err)
	}

	var secretValues []string
	for _, s := range l.Route.Secrets {
		secretValues = append(secretValues, s.Value)
	}
	redactor := sandbox.NewRedactor(secretValues...)
	transcript, err := os.Create(task.TranscriptPath)
	if err != nil {
		return runner.AgentResult{}, fmt.Errorf("%s: transcript: %w", l.Name, err)
	}
	defer transcript.Close()
	tw := redactor.Writer(transcript)
	defer tw.Close()
	clock := &lineClock{w: tw}
	if task.StepsPath != "" && l.Steps != nil {
		f, err := os.Create(task.StepsPath)
		if err != nil {
			return runner.AgentResult{}, fmt.Errorf("%s: steps: %w", l.Name, err)
		}
		defer f.Close()
		sw := redactor.Writer(f)
		defer sw.Close()
		clock.steps = &stepLog{w: sw, d: l.Steps(), start: task.Start}
	}

	if task.Caps.Time > 0 {
		var stop context.CancelFunc
		runCtx, stop = context.WithTimeout(runCtx, task.Caps.Time)
		defer stop()
	}
	stdout, w := io.Pipe()
	stderr := &Tail{Max: 8 << 10}
	cmd := sb.Command(runCtx, argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = w, stderr
	var diag *io.PipeWriter
	var wg sync.WaitGroup
	if l.Diagnostics != nil {
		var r *io.PipeReader
		r, diag = io.Pipe()
		cmd.Stderr = diag
		wg.Go(func() {
			hit(l.Diagnostics(r, stderr))
			_, _ = io.Copy(io.Discard, r)
		})
	}
	cmd.Services = services

	start := time.Now()
	if err := cmd.Start(); err != nil {
		return runner.AgentResult{}, fmt.Errorf("%s: start: %w", l.Name, err)
	}
	stream := l.Stream(clock, meter)
	wg.Go(func() {
		c, _ := stream.Feed(stdout)
		hit(c)
		_, _ = io.Copy(io.Discard, stdout)
	})
	waitErr := cmd.Wait()
	w.Close()
	if diag != nil {
		diag.Close()
	}
	wg.Wait()

	res := redacted(stream.Result(), redactor)
	res.Wall = time.Since(start)
	res.TranscriptTimes = clock.times()
	if clock.cut() && l.Log != nil {
		l.Log.Warn("agent transcript cut short", "agent", l.Name, "max_lines", MaxTranscriptLines, "max_bytes", MaxTranscriptBytes)
	}
	res.Stderr = redactor.String(stderr.String())
	res.ExitCode = ExitCode(waitErr)
	mu.Lock()
	defer mu.Unlock()
	switch {
	case capHit != "":
		res.CapHit = capHit
	case task.Caps.Time > 0 && errors.Is(runCtx.Err(), context.DeadlineExceeded) && ctx.Err() == nil:
		res.CapHit = pairbench.CapTime
	}
	if res.CapHit == "" && ctx.Err() == nil && waitErr != nil && res.Turns == 0 && res.StopReason == "" {
		// The agent died before its first turn without saying why in its
		// stream: a broken install or config, not the agent's doing.
		return res, fmt.Errorf("%s exited before its first turn (%v): %s", l.Name, waitErr, LastLine(res.Stderr))
	}
	return res, nil
}

// redacted returns res with every secret redacted from its texts, which
// reach rows.jsonl and the report.
func redacted(res runner.AgentResult, r *sandbox.Redactor) runner.AgentResult {
	res.Final, res.StopReason, res.ErrorMessage = r.String(res.Final), r.String(res.StopReason), r.String(res.ErrorMessage)
	res.Declared = slices.Clone(res.Declared)
	for i, d := range res.Declared {
		res.Declared[i] = r.String(d)
	}
	res.Calls = slices.Clone(res.Calls)
	for i := range res.Calls {
		res.Calls[i].Name = r.String(res.Calls[i].Name)
	}
	return res
}

// ExitCode is a command's exit status: 0 for nil, -1 when it was killed or
// never ran.
func ExitCode(err error) int {
	if err == nil {
		return 0
	}
	var ee interface{ ExitCode() int }
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	return -1
}

// LastLine returns the last non-empty line of s.
func LastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// Tail keeps the last Max bytes written to it.
type Tail struct {
	mu  sync.Mutex
	Max int
	b   []byte
}

func (t *Tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.Max {
		t.b = t.b[len(t.b)-t.Max:]
	}
	return len(p), nil
}

func (t *Tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}

// MaxTranscriptLines and MaxTranscriptBytes bound what Run keeps of an
// agent's transcript: the agent chooses what it writes, and each line it
// wrote cost the runner its time in memory (24 bytes, more than the
// shortest record) and the line on disk, without bound. What comes after
// is read (caps still count) but not kept; no real trial comes near.
const (
	MaxTranscriptLines = 1 << 20
	MaxTranscriptBytes = 1 << 30
)

// lineClock passes what the stream writes to the transcript through to w
// and notes when each line ended: the stream copies a record as it reads
// it from the agent, so that is when the agent wrote it. Each line's steps
// go to steps, when set. Once a write would pass MaxTranscriptLines or
// MaxTranscriptBytes, it and every later one are dropped.
type lineClock struct {
	w     io.Writer
	steps *stepLog
	mu    sync.Mutex
	at    []time.Time
	bytes int
	full  bool
}

func (c *lineClock) Write(p []byte) (int, error) {
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	lines := bytes.Count(p, []byte{'\n'})
	if c.full || len(c.at)+lines > MaxTranscriptLines || c.bytes+len(p) > MaxTranscriptBytes {
		c.full = true
		return len(p), nil
	}
	for range lines {
		c.at = append(c.at, now)
	}
	c.bytes += len(p)
	if c.steps != nil {
		c.steps.write(p, now)
	}
	return c.w.Write(p)
}

// stepLog decodes the transcript's lines into steps as they are written,
// and writes the steps to w, at their line's time since start.
type stepLog struct {
	w     io.Writer
	d     Decoder
	start time.Time
	// part is the line written so far: a stream may write a record and its
	// newline apart.
	part []byte
}

func (l *stepLog) write(p []byte, at time.Time) {
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			l.part = append(l.part, p...)
			return
		}
		line := p[:i]
		if len(l.part) > 0 {
			line = append(l.part, line...)
		}
		p = p[i+1:]
		l.part = nil
		if line = bytes.TrimSpace(line); len(line) == 0 {
			continue
		}
		ms := int64(-1)
		if !l.start.IsZero() {
			ms = at.Sub(l.start).Milliseconds()
		}
		for _, s := range decode(l.d, line) {
			s.AtMS = ms
			_ = rundir.WriteStep(l.w, s)
		}
	}
}

// cut reports whether writes were dropped.
func (c *lineClock) cut() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.full
}

func (c *lineClock) times() []time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Time(nil), c.at...)
}
