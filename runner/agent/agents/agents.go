// Package agents names the agents pairbench benches and builds one by
// name: the one place `--agent`, the Action's agent input and `/bench run
// --agent` are read.
package agents

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/pairbench/pairbench/runner"
	"github.com/pairbench/pairbench/runner/agent"
	"github.com/pairbench/pairbench/runner/agent/claudecode"
	"github.com/pairbench/pairbench/runner/agent/codex"
	"github.com/pairbench/pairbench/runner/agent/pi"
)

// Names are the agents, the default first.
var Names = []string{"pi", claudecode.Name, codex.Name}

// Default is the agent a run benches when none is named.
const Default = "pi"

// Check fails, in one line, for an unknown agent, a model the agent cannot
// take, or a model whose key hostEnv lacks (the scripted model takes any).
// It reads nothing from disk, so bad input is refused before anything else
// happens.
func Check(name string, m runner.Model, hostEnv []string) error {
	switch name {
	case "pi":
		return pi.Check(m, hostEnv)
	case claudecode.Name:
		return claudecode.Check(m, hostEnv)
	case codex.Name:
		return codex.Check(m, hostEnv)
	}
	return fmt.Errorf("unknown agent %q; want one of %s", name, strings.Join(Names, ", "))
}

// HarnessTools are the tools the named agent always declares beside the
// allowlist (runner.PlanOptions.HarnessTools).
func HarnessTools(name string) []string {
	if name == codex.Name {
		return slices.Clone(codex.HarnessTools)
	}
	return nil
}

// Config is what every agent is built from.
type Config struct {
	Tools   agent.Tools
	HostEnv []string
	// Executable is pairbench's own binary (the sandbox's init).
	Executable, TempRoot string
	Log                  *slog.Logger
}

// Agent is a built agent: it runs trials, and Warm and Close bracket a run
// (a no-op for agents with nothing to warm).
type Agent interface {
	runner.Agent
	Warm(ctx context.Context, servers ...runner.MCPServer) error
	Close() error
}

// New builds the named agent, failing when it is not installed.
func New(name string, c Config) (Agent, error) {
	extra := append([]string{c.Tools.Node()}, c.Tools.PlaywrightPackages()...)
	switch name {
	case "pi":
		return pi.New(pi.Config{Node: c.Tools.Node(), Package: c.Tools.Pi(), ExtraPackages: c.Tools.PlaywrightPackages(),
			HostEnv: c.HostEnv, Executable: c.Executable, TempRoot: c.TempRoot, Log: c.Log})
	case claudecode.Name:
		a, err := claudecode.New(claudecode.Config{Binary: c.Tools.ClaudeCode(), ExtraPackages: extra,
			HostEnv: c.HostEnv, Executable: c.Executable, TempRoot: c.TempRoot, Log: c.Log})
		return unwarmed{a}, err
	case codex.Name:
		a, err := codex.New(codex.Config{Binary: c.Tools.Codex(), ExtraPackages: extra,
			HostEnv: c.HostEnv, Executable: c.Executable, TempRoot: c.TempRoot, Log: c.Log})
		return unwarmed{a}, err
	}
	return nil, fmt.Errorf("unknown agent %q; want one of %s", name, strings.Join(Names, ", "))
}

// Package is the directory whose package.json holds the named agent's
// version.
func Package(name string, t agent.Tools) string {
	switch name {
	case claudecode.Name:
		return t.ClaudeCodePackage()
	case codex.Name:
		return t.CodexPackage()
	}
	return t.Pi()
}

// unwarmed is an agent whose native binary needs no warm-up.
type unwarmed struct{ runner.Agent }

func (unwarmed) Warm(context.Context, ...runner.MCPServer) error { return nil }
func (unwarmed) Close() error                                    { return nil }
