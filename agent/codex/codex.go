// Package codex runs Codex (@openai/codex, its native binary) as a
// pairbench agent: headless (exec --json), isolated from the host's
// configuration, inside the sandbox, its model reached through a provider
// entry speaking the Responses API, its events and request traces parsed
// into a runner.AgentResult.
package codex

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/pairbench/pairbench/agent/launch"
	"github.com/pairbench/pairbench/rundir"
	"github.com/pairbench/pairbench/runner"
	"github.com/pairbench/pairbench/sandbox"
)

// Name is the agent's name on the command line and in run.json.
const Name = "codex"

// Package is @openai/codex's directory under node_modules, whose
// package.json holds the version; Binary is its native binary for this
// machine (the platform package's).
const (
	Package = "@openai/codex"
	Binary  = "@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex"
)

// HarnessTools are the tools Codex 0.171 declares whatever it is told:
// readers of its MCP servers' resources (the same two servers) and a
// question to the user that exec mode refuses. They join the plan's
// allowlist; none reaches anything the allowlist does not.
var HarnessTools = []string{"list_mcp_resource_templates", "list_mcp_resources", "read_mcp_resource", "request_user_input"}

// features are Codex features turned off: every built-in tool (shell,
// patches, images, sub-agents, goals, apps, plugins, browser and computer
// use, search and suggestion tools), hooks, memories and shell snapshots.
var features = []string{
	"shell_tool", "unified_exec", "multi_agent", "goals", "view_image", "image_generation", "apps", "plugins",
	"hooks", "tool_suggest", "browser_use", "computer_use", "skill_search", "sleep_tool", "shell_snapshot",
	"in_app_browser", "code_mode_host", "memories",
}

// Config locates Codex and says how to confine it.
type Config struct {
	// Binary is Codex's native binary (Binary, under node_modules).
	Binary string
	// ExtraPackages are what the agent's other processes need read-only:
	// Node and Playwright MCP, which run beside Codex.
	ExtraPackages []string
	// HostEnv is the environment the model's key is read from
	// (os.Environ()); nothing else of it reaches the CLI.
	HostEnv []string
	// Bwrap, Executable and TempRoot are passed to the sandbox.
	Bwrap, Executable, TempRoot string
	// Network is how the egress proxy reaches the model's host (the
	// public web when zero).
	Network launch.Network
	// Log receives the egress proxy's refusals.
	Log *slog.Logger
}

// Agent runs Codex. It implements runner.Agent.
type Agent struct{ cfg Config }

var _ runner.Agent = (*Agent)(nil)

// New checks that Codex is where cfg says.
func New(cfg Config) (*Agent, error) {
	var err error
	if cfg.Binary, err = filepath.Abs(cfg.Binary); err != nil {
		return nil, fmt.Errorf("codex: %w", err)
	}
	for i, p := range cfg.ExtraPackages {
		if cfg.ExtraPackages[i], err = filepath.Abs(p); err != nil {
			return nil, fmt.Errorf("codex: %w", err)
		}
	}
	if fi, err := os.Stat(cfg.Binary); err != nil || fi.IsDir() || fi.Mode().Perm()&0o111 == 0 {
		return nil, fmt.Errorf("codex: %s is not an executable file (run `make setup`)", cfg.Binary)
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	return &Agent{cfg: cfg}, nil
}

// Check fails, in one line, for a model Codex cannot take or whose key
// hostEnv lacks. It reads nothing from disk.
func Check(m rundir.Model, hostEnv []string) error {
	if err := speaks(m); err != nil || m.Scripted {
		return err
	}
	_, err := route(m, hostEnv)
	return err
}

// speaks fails for a model Codex cannot talk to: it speaks the OpenAI
// Responses API, so the model is OpenAI's or one served at a base URL that
// speaks it (the scripted model does).
func speaks(m rundir.Model) error {
	if m.Scripted || m.Provider == "openai" || m.BaseURL != "" {
		return nil
	}
	return fmt.Errorf("codex speaks only the OpenAI Responses API: model %s is not openai/... (give --model openai/ID, the scripted model, or --model-url for a server that speaks it)", m)
}

// codexHome is Codex's home inside the sandbox: fresh every run, holding
// only config.toml, so no user config, rules, skills, logins or history
// apply.
const codexHome = sandbox.HomeDir + "/codex"

func (a *Agent) policy(egress *sandbox.Egress, env map[string]string) sandbox.Policy {
	return sandbox.Policy{
		ReadOnly: append([]string{a.cfg.Binary}, a.cfg.ExtraPackages...), Env: env, Egress: egress,
		Bwrap: a.cfg.Bwrap, Executable: a.cfg.Executable, TempRoot: a.cfg.TempRoot,
		Limits: sandbox.AgentLimits, // /tmp and /workspace capped: no trial fills the runner's disk
	}
}

// keyEnv is the variable Codex reads its key from (env_key); keyHeader
// is where it sends it ("Bearer KEY"), the only header the egress proxy
// swaps the placeholder in.
const (
	keyEnv    = "OPENAI_API_KEY"
	keyHeader = "Authorization"
)

// route says how Codex reaches m, its key read from hostEnv.
func route(m rundir.Model, hostEnv []string) (launch.Route, error) {
	host := ""
	if m.Provider == "openai" {
		host = "api.openai.com"
	}
	return launch.ModelRoute(m, host, launch.Key{Env: keyEnv, Headers: []string{keyHeader}}, hostEnv)
}

// Run runs Codex on task in a fresh sandbox (see launch.Run).
func (a *Agent) Run(ctx context.Context, task runner.AgentTask) (runner.AgentResult, error) {
	if err := speaks(task.Model); err != nil {
		return runner.AgentResult{}, err
	}
	route, err := route(task.Model, a.cfg.HostEnv)
	if err != nil {
		return runner.AgentResult{}, err
	}
	env := map[string]string{"CODEX_HOME": codexHome, "RUST_LOG": LogTargets, "NO_COLOR": "1"}
	if len(route.Secrets) == 0 {
		env[keyEnv] = launch.ScriptedKey
	} else {
		// Codex reads the key from OPENAI_API_KEY whatever the host
		// called it; only the placeholder reaches the sandbox.
		route.Secrets[0].Name = keyEnv
	}
	st := NewStream(task.Caps, task.Model, nil)
	st.Started = task.Started
	// No variable of the host's passes (Launch.HostEnv unset): Codex's
	// configuration is env and its configuration directory alone, and
	// the host's provider settings (ANTHROPIC_BETAS, *_BASE_URL, ...)
	// would change its requests. Its key travels as route's secret.
	return launch.Run(ctx, launch.Launch{
		Name: Name, Task: task, Route: route, Env: env, Network: a.cfg.Network, Policy: a.policy,
		Configure: func(home string, servers []runner.MCPServer) ([]string, error) {
			dir := filepath.Join(home, filepath.Base(codexHome))
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return nil, err
			}
			if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte(ConfigTOML(task, servers)), 0o644); err != nil {
				return nil, fmt.Errorf("write config.toml: %w", err)
			}
			return append([]string{a.cfg.Binary}, Args(task)...), nil
		},
		Stream: func(transcript io.Writer, meter *launch.Meter) launch.Stream {
			st.mu.Lock()
			st.transcript, st.meter = transcript, meter
			st.mu.Unlock()
			return st
		},
		Diagnostics: st.Diagnostics,
		Steps:       NewSteps,
		TempRoot:    a.cfg.TempRoot, Log: a.cfg.Log,
	})
}

// ConfigTOML returns config.toml for a task and the MCP servers as the agent
// reaches them: the model through a provider entry of its own (the
// Responses API at the model's base URL, the key from OPENAI_API_KEY, few
// retries), the appended system prompt as developer instructions, no web
// search, no approvals, Codex's own sandbox off (ours holds it; an inner
// bubblewrap cannot start under --disable-userns), its analytics off, the built-in tools off,
// and each MCP server limited to the allowlist's tools of it.
func ConfigTOML(task runner.AgentTask, servers []runner.MCPServer) string {
	var b strings.Builder
	line := func(k, v string) { fmt.Fprintf(&b, "%s = %s\n", k, v) }
	m := task.Model
	baseURL := m.BaseURL
	if baseURL == "" {
		baseURL = "https://api.openai.com/v1"
	}
	line("model", strconv.Quote(m.ID))
	line("model_provider", `"pairbench"`)
	line("approval_policy", `"never"`)
	line("sandbox_mode", `"danger-full-access"`)
	line("web_search", `"disabled"`)
	line("check_for_update_on_startup", "false")
	if task.SystemPrompt != "" {
		line("developer_instructions", strconv.Quote(task.SystemPrompt))
	}
	// Codex's analytics go to ab.chatgpt.com, which the egress proxy
	// refuses: a refusal in the log of every trial, for nothing.
	b.WriteString("\n[analytics]\n")
	line("enabled", "false")
	b.WriteString("\n[features]\n")
	for _, f := range features {
		line(f, "false")
	}
	b.WriteString("\n[model_providers.pairbench]\n")
	line("name", strconv.Quote("pairbench: "+m.String()))
	line("base_url", strconv.Quote(baseURL))
	line("env_key", strconv.Quote(keyEnv))
	line("wire_api", `"responses"`)
	line("request_max_retries", "3")
	line("stream_max_retries", "3")
	for _, s := range servers {
		fmt.Fprintf(&b, "\n[mcp_servers.%s]\n", strconv.Quote(s.Name))
		if s.URL != "" {
			line("url", strconv.Quote(s.URL))
		} else {
			line("command", strconv.Quote(s.Command))
			line("args", quoteList(s.Args))
		}
		// Required: Codex waits for the server before its first request (an
		// optional one may join a later turn) and fails if it cannot start.
		line("required", "true")
		line("startup_timeout_sec", "30")
		prefix := "mcp__" + s.Name + "__"
		var enabled []string
		for _, t := range task.Allowlist {
			if name, ok := strings.CutPrefix(t, prefix); ok {
				enabled = append(enabled, name)
			}
		}
		line("enabled_tools", quoteList(enabled))
	}
	return b.String()
}

func quoteList(xs []string) string {
	q := make([]string, len(xs))
	for i, x := range xs {
		q[i] = strconv.Quote(x)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// Args returns Codex's command line for a task: exec with JSONL events, no
// git repository needed, no session kept, Codex's approvals and sandbox off
// inside ours, the task as the prompt.
func Args(task runner.AgentTask) []string {
	return []string{"exec", "--json", "--skip-git-repo-check", "--ephemeral", "--ignore-rules",
		"--dangerously-bypass-approvals-and-sandbox", "--color", "never", "--", task.Prompt}
}
