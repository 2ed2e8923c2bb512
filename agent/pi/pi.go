package pi

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"strings"

	"github.com/pairbench/pairbench/agent/launch"
	"github.com/pairbench/pairbench/rundir"
	"github.com/pairbench/pairbench/runner"
	"github.com/pairbench/pairbench/sandbox"
)

// Name is the agent's name on the command line and in run.json; Package
// is its package's directory under node_modules.
const (
	Name    = "pi"
	Package = "@earendil-works/pi-coding-agent"
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
	// Network is how the egress proxy reaches the model's host (the
	// public web when zero).
	Network launch.Network
	// Log receives the egress proxy's refusals.
	Log *slog.Logger
}

// Agent runs pi. It implements runner.Agent.
type Agent struct {
	cfg Config
	cli string
	// cache is the compile cache Warm filled ("" before), in cacheDir,
	// which cacheHold holds.
	cache, cacheDir string
	cacheHold       *os.File
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
		return nil, fmt.Errorf("pi: node: %w (run `make setup`)", err)
	}
	cli, err := binPath(cfg.Package)
	if err != nil {
		return nil, fmt.Errorf("pi: %w (run `make setup`)", err)
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

// Check fails, in one line, for a model pi cannot reach (a provider it
// does not know, without a base URL) or whose key hostEnv lacks. It reads
// nothing from disk.
func Check(m rundir.Model, hostEnv []string) error {
	if m.Scripted {
		return nil
	}
	_, err := route(m, hostEnv)
	return err
}

// route says how pi reaches m, its key read from hostEnv.
func route(m rundir.Model, hostEnv []string) (launch.Route, error) {
	keyEnv := keyEnvs[m.Provider]
	if keyEnv == "" {
		keyEnv = strings.ToUpper(strings.ReplaceAll(m.Provider, "-", "_")) + "_API_KEY"
	}
	// pi speaks each provider's own API through its SDK, so the key goes
	// in whichever authorization header that provider reads.
	return launch.ModelRoute(m, providerHosts[m.Provider], launch.Key{Env: keyEnv}, hostEnv)
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
		Limits: sandbox.AgentLimits, // /tmp and /workspace capped: no trial fills the runner's disk
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
	route, err := route(task.Model, a.cfg.HostEnv)
	if err != nil {
		return runner.AgentResult{}, err
	}
	env := map[string]string{"PI_CODING_AGENT_DIR": agentDir, "PI_OFFLINE": "1", "PI_TELEMETRY": "0"}
	if task.Model.Scripted && task.Model.KeyEnv != "" && len(route.Secrets) == 0 {
		// pi wants a key; the scripted model takes any.
		env[task.Model.KeyEnv] = launch.ScriptedKey
	}
	return launch.Run(ctx, launch.Launch{
		Name: Name, Task: task, Route: route, Env: env, HostEnv: a.cfg.HostEnv, Network: a.cfg.Network,
		Policy: a.policy,
		Configure: func(home string, servers []runner.MCPServer) ([]string, error) {
			t := task
			t.MCPServers = servers
			if err := writeAgentDir(filepath.Join(home, filepath.Base(agentDir)), t); err != nil {
				return nil, err
			}
			return append([]string{a.cfg.Node, a.cli}, args(t)...), nil
		},
		Stream: func(transcript io.Writer, meter *launch.Meter) launch.Stream {
			s := NewStream(task.Caps, transcript)
			s.Started, s.Meter = task.Started, meter
			return s
		},
		Steps:    NewSteps,
		TempRoot: a.cfg.TempRoot, Log: a.cfg.Log,
	})
}

// Tools locates the pinned tools pairbench installs (launch.Tools).
type Tools = launch.Tools
