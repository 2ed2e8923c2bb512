// Package claudecode runs Claude Code (@anthropic-ai/claude-code 2.x, its
// native binary) as a pairbench agent: headless (-p, stream-json), isolated
// from the host's configuration, inside the sandbox, with its event stream
// parsed into a runner.AgentResult.
package claudecode

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/pairbench/pairbench/agent/launch"
	"github.com/pairbench/pairbench/rundir"
	"github.com/pairbench/pairbench/runner"
	"github.com/pairbench/pairbench/sandbox"
)

// Name is the agent's name on the command line and in run.json.
const Name = "claude-code"

// Package is @anthropic-ai/claude-code's directory under node_modules,
// whose package.json holds the version; Binary is its native binary for
// this machine (the platform package's: the package's own bin is a copy).
const (
	Package = "@anthropic-ai/claude-code"
	Binary  = "@anthropic-ai/claude-code-linux-x64/claude"
)

// Config locates Claude Code and says how to confine it.
type Config struct {
	// Binary is Claude Code's native binary (Binary, under node_modules).
	Binary string
	// ExtraPackages are what the agent's other processes need read-only:
	// Node and Playwright MCP, which run beside Claude Code.
	ExtraPackages []string
	// HostEnv is the environment the model's key is read from
	// (os.Environ()); nothing else of it reaches the CLI.
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

// Agent runs Claude Code. It implements runner.Agent.
type Agent struct{ cfg Config }

var _ runner.Agent = (*Agent)(nil)

// New checks that Claude Code is where cfg says, so a missing agent stops a
// run before its first trial with a clear error.
func New(cfg Config) (*Agent, error) {
	var err error
	if cfg.Binary, err = filepath.Abs(cfg.Binary); err != nil {
		return nil, fmt.Errorf("claude-code: %w", err)
	}
	for i, p := range cfg.ExtraPackages {
		if cfg.ExtraPackages[i], err = filepath.Abs(p); err != nil {
			return nil, fmt.Errorf("claude-code: %w", err)
		}
	}
	if fi, err := os.Stat(cfg.Binary); err != nil || fi.IsDir() || fi.Mode().Perm()&0o111 == 0 {
		return nil, fmt.Errorf("claude-code: %s is not an executable file (run `make setup`)", cfg.Binary)
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	return &Agent{cfg: cfg}, nil
}

// Check fails, in one line, for a model Claude Code cannot take or whose
// key hostEnv lacks. It reads nothing from disk.
func Check(m rundir.Model, hostEnv []string) error {
	if err := speaks(m); err != nil || m.Scripted {
		return err
	}
	_, _, err := route(m, hostEnv)
	return err
}

// speaks fails for a model Claude Code cannot talk to: it speaks only the
// Anthropic Messages API, so the model is Anthropic's or one served at a
// base URL that speaks it (the scripted model does).
func speaks(m rundir.Model) error {
	if m.Scripted || m.Provider == "anthropic" || m.BaseURL != "" {
		return nil
	}
	return fmt.Errorf("claude-code speaks only the Anthropic Messages API: model %s is not anthropic/... (give --model anthropic/ID, the scripted model, or --model-url for a server that speaks it)", m)
}

func (a *Agent) policy(egress *sandbox.Egress, env map[string]string) sandbox.Policy {
	return sandbox.Policy{
		ReadOnly: append([]string{a.cfg.Binary}, a.cfg.ExtraPackages...), Env: env, Egress: egress,
		Bwrap: a.cfg.Bwrap, Executable: a.cfg.Executable, TempRoot: a.cfg.TempRoot,
		Limits: sandbox.AgentLimits, // /tmp and /workspace capped: no trial fills the runner's disk
	}
}

// configDir is Claude Code's configuration directory inside the sandbox: a
// fresh one every run (the sandbox's home is), so no user settings, hooks,
// plugins, skills, memory or stored logins exist for it to read.
const configDir = sandbox.HomeDir + "/claude"

// mcpConfig is where the frozen MCP configuration is written, inside the
// configuration directory.
const mcpConfig = configDir + "/pairbench-mcp.json"

// route says how Claude Code reaches m and under which variable of hostEnv
// its key travels: ANTHROPIC_API_KEY, sent as X-Api-Key, when the host has
// one (or the model names its own variable), else CLAUDE_CODE_OAUTH_TOKEN,
// sent as Authorization: Bearer. The egress proxy swaps the placeholder in
// that header alone.
func route(m rundir.Model, hostEnv []string) (launch.Route, string, error) {
	key := launch.Key{Env: "ANTHROPIC_API_KEY", Headers: []string{"X-Api-Key"}}
	if m.KeyEnv == "" && launch.Lookup(hostEnv, key.Env) == "" && launch.Lookup(hostEnv, "CLAUDE_CODE_OAUTH_TOKEN") != "" {
		key = launch.Key{Env: "CLAUDE_CODE_OAUTH_TOKEN", Headers: []string{"Authorization"}}
	}
	host := ""
	if m.Provider == "anthropic" {
		host = "api.anthropic.com"
	}
	r, err := launch.ModelRoute(m, host, key, hostEnv)
	keyEnv := key.Env
	if m.KeyEnv != "" {
		keyEnv = m.KeyEnv
	} else if err != nil && !m.Scripted && launch.Lookup(hostEnv, keyEnv) == "" {
		err = fmt.Errorf("model %s: neither ANTHROPIC_API_KEY nor CLAUDE_CODE_OAUTH_TOKEN is set", m)
	}
	return r, keyEnv, err
}

// Run runs Claude Code on task in a fresh sandbox (see launch.Run).
func (a *Agent) Run(ctx context.Context, task runner.AgentTask) (runner.AgentResult, error) {
	if err := speaks(task.Model); err != nil {
		return runner.AgentResult{}, err
	}
	route, keyEnv, err := route(task.Model, a.cfg.HostEnv)
	if err != nil {
		return runner.AgentResult{}, err
	}
	env := Env(task.Model)
	if len(route.Secrets) == 0 {
		env["ANTHROPIC_API_KEY"] = launch.ScriptedKey
	} else if keyEnv != "ANTHROPIC_API_KEY" && keyEnv != "CLAUDE_CODE_OAUTH_TOKEN" {
		// A key under another name: Claude Code reads ANTHROPIC_API_KEY,
		// so the secret travels under that name.
		route.Secrets[0].Name = "ANTHROPIC_API_KEY"
	}
	// No variable of the host's passes (Launch.HostEnv unset): Claude Code's
	// configuration is env and its configuration directory alone, and
	// the host's provider settings (ANTHROPIC_BETAS, *_BASE_URL, ...)
	// would change its requests. Its key travels as route's secret.
	return launch.Run(ctx, launch.Launch{
		Name: Name, Task: task, Route: route, Env: env, Network: a.cfg.Network, Policy: a.policy,
		Configure: func(home string, servers []runner.MCPServer) ([]string, error) {
			dir := filepath.Join(home, filepath.Base(configDir))
			if err := writeConfig(dir, servers); err != nil {
				return nil, err
			}
			return append([]string{a.cfg.Binary}, Args(task)...), nil
		},
		Stream: func(transcript io.Writer, meter *launch.Meter) launch.Stream {
			s := NewStream(task.Caps, task.Model, transcript)
			s.Started, s.Meter = task.Started, meter
			return s
		},
		Steps:    NewSteps,
		TempRoot: a.cfg.TempRoot, Log: a.cfg.Log,
	})
}

// Env is Claude Code's environment for a model, beside the key: its
// configuration in a fresh directory, no traffic but the model's (no
// telemetry, error reports, update checks), and the model's base URL.
func Env(m rundir.Model) map[string]string {
	env := map[string]string{
		"CLAUDE_CONFIG_DIR":                        configDir,
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
		"DISABLE_TELEMETRY":                        "1",
		"DISABLE_ERROR_REPORTING":                  "1",
		"DISABLE_AUTOUPDATER":                      "1",
		"CLAUDE_CODE_DISABLE_AUTO_MEMORY":          "1",
		// A provider that keeps failing ends the run in seconds, not
		// minutes of back-off.
		"CLAUDE_CODE_MAX_RETRIES": "3",
	}
	if m.BaseURL != "" {
		// Claude Code appends /v1/messages itself.
		env["ANTHROPIC_BASE_URL"] = strings.TrimSuffix(strings.TrimSuffix(m.BaseURL, "/"), "/v1")
	}
	return env
}

// writeConfig writes the frozen MCP configuration into dir, Claude Code's
// configuration directory, which holds nothing else.
func writeConfig(dir string, servers []runner.MCPServer) error {
	entries := map[string]any{}
	for _, s := range servers {
		if s.URL != "" {
			entries[s.Name] = map[string]any{"type": "http", "url": s.URL}
		} else {
			entries[s.Name] = map[string]any{"type": "stdio", "command": s.Command, "args": s.Args}
		}
	}
	b, err := json.MarshalIndent(map[string]any{"mcpServers": entries}, "", "  ")
	if err != nil {
		return fmt.Errorf("encode MCP config: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create claude config dir: %w", err)
	}
	return os.WriteFile(filepath.Join(dir, filepath.Base(mcpConfig)), b, 0o644)
}

// Args returns Claude Code's command line for a task: headless with the
// stream-json event stream; settings from no file (user, project and local
// alike), no slash commands or skills, no session kept; only the MCP
// servers of the frozen config; no built-in tool; the allowlisted tools
// allowed and every other tool the browser server offers withheld; and the
// permission prompts off (dontAsk: what is not allowed is refused, nothing
// asks).
func Args(task runner.AgentTask) []string {
	var withheld []string
	for _, t := range launch.PlaywrightOtherTools {
		withheld = append(withheld, "mcp__browser__"+t)
	}
	a := []string{
		"-p", "--output-format", "stream-json", "--verbose",
		"--setting-sources", "",
		"--disable-slash-commands",
		"--no-session-persistence",
		"--strict-mcp-config", "--mcp-config", mcpConfig,
		"--tools", "",
		"--disallowedTools", strings.Join(withheld, ","),
		"--permission-mode", "dontAsk",
		"--model", task.Model.ID,
	}
	if len(task.Allowlist) > 0 {
		a = append(a, "--allowedTools", strings.Join(task.Allowlist, ","))
	}
	if task.SystemPrompt != "" {
		a = append(a, "--append-system-prompt", task.SystemPrompt)
	}
	// "--" keeps a prompt that starts with "-" from reading as a flag.
	return append(a, "--", task.Prompt)
}
