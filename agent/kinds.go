// Package agent is the table of the agents pairbench benches (Kinds): the
// one place `--agent`, the Action's agent input and `/bench run --agent`
// are read, and the one place an agent is added, as a row naming its
// adapter's package.
package agent

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"

	"github.com/pairbench/pairbench/agent/claudecode"
	"github.com/pairbench/pairbench/agent/codex"
	"github.com/pairbench/pairbench/agent/launch"
	"github.com/pairbench/pairbench/agent/pi"
	"github.com/pairbench/pairbench/rundir"
	"github.com/pairbench/pairbench/runner"
)

// Kind is one agent pairbench benches: all the rest of pairbench knows of
// it.
type Kind struct {
	// Name names it on the command line, in run.json and in /bench run.
	Name string
	// Package is its npm package's directory under the Node tools'
	// node_modules (a slash path): its package.json holds the version
	// run.json records.
	Package string
	// HarnessTools are the tools it always declares beside the allowlist
	// (runner.PlanOptions.HarnessTools).
	HarnessTools []string
	// Check fails, in one line, for a model it cannot take or whose key
	// hostEnv lacks (the scripted model takes any). It reads nothing from
	// disk.
	Check func(m rundir.Model, hostEnv []string) error
	// New builds it, failing when it is not installed.
	New func(c Config) (Agent, error)
	// Steps returns a fresh decoder of its transcript's records into
	// steps: what it writes to steps.jsonl as it runs, and how a trial
	// recorded before steps.jsonl is read.
	Steps func() launch.Decoder
}

// Kinds are the agents, the default first.
var Kinds = []Kind{
	{Name: pi.Name, Package: pi.Package, Check: pi.Check, Steps: pi.NewSteps, New: func(c Config) (Agent, error) {
		return pi.New(pi.Config{Node: c.Tools.Node(), Package: c.Tools.Path(pi.Package), ExtraPackages: c.Tools.PlaywrightPackages(),
			HostEnv: c.HostEnv, Executable: c.Executable, TempRoot: c.TempRoot, Log: c.Log})
	}},
	{Name: claudecode.Name, Package: claudecode.Package, Check: claudecode.Check, Steps: claudecode.NewSteps, New: func(c Config) (Agent, error) {
		a, err := claudecode.New(claudecode.Config{Binary: c.Tools.Path(claudecode.Binary), ExtraPackages: c.besideAgent(),
			HostEnv: c.HostEnv, Executable: c.Executable, TempRoot: c.TempRoot, Log: c.Log})
		return unwarmed{a}, err
	}},
	{Name: codex.Name, Package: codex.Package, HarnessTools: codex.HarnessTools, Check: codex.Check, Steps: codex.NewSteps, New: func(c Config) (Agent, error) {
		a, err := codex.New(codex.Config{Binary: c.Tools.Path(codex.Binary), ExtraPackages: c.besideAgent(),
			HostEnv: c.HostEnv, Executable: c.Executable, TempRoot: c.TempRoot, Log: c.Log})
		return unwarmed{a}, err
	}},
}

// Names are the agents' names, the default first.
var Names = func() []string {
	names := make([]string, len(Kinds))
	for i, k := range Kinds {
		names[i] = k.Name
	}
	return names
}()

// Default is the agent a run benches when none is named.
const Default = pi.Name

// Find returns the named agent's kind, or an error naming the agents.
func Find(name string) (Kind, error) {
	for _, k := range Kinds {
		if k.Name == name {
			return k, nil
		}
	}
	return Kind{}, fmt.Errorf("unknown agent %q; want one of %s", name, strings.Join(Names, ", "))
}

// Check fails, in one line, for an unknown agent, a model the agent cannot
// take, or a model whose key hostEnv lacks (the scripted model takes any).
// It reads nothing from disk, so bad input is refused before anything else
// happens.
func Check(name string, m rundir.Model, hostEnv []string) error {
	k, err := Find(name)
	if err != nil {
		return err
	}
	return k.Check(m, hostEnv)
}

// HarnessTools are the tools the named agent always declares beside the
// allowlist (runner.PlanOptions.HarnessTools).
func HarnessTools(name string) []string {
	k, _ := Find(name)
	return slices.Clone(k.HarnessTools)
}

// Config is what every agent is built from.
type Config struct {
	Tools   launch.Tools
	HostEnv []string
	// Executable is pairbench's own binary (the sandbox's init).
	Executable, TempRoot string
	Log                  *slog.Logger
}

// besideAgent are the packages an agent's other processes need read-only
// beside a native binary: Node and Playwright MCP, which run beside it.
func (c Config) besideAgent() []string {
	return append([]string{c.Tools.Node()}, c.Tools.PlaywrightPackages()...)
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
	k, err := Find(name)
	if err != nil {
		return nil, err
	}
	return k.New(c)
}

// Package is the directory whose package.json holds the named agent's
// version ("" for an unknown agent).
func Package(name string, t launch.Tools) string {
	k, err := Find(name)
	if err != nil {
		return ""
	}
	return t.Path(k.Package)
}

// OldTranscripts returns the reader of the named agent's transcript.jsonl
// into steps, each line at its time in times, for the trials recorded
// before trials kept steps.jsonl (viewer.Site.OldTranscripts); nil for an
// unknown agent.
func OldTranscripts(name string) func(transcript io.Reader, times []int64) ([]rundir.Step, error) {
	k, err := Find(name)
	if err != nil {
		return nil
	}
	return func(transcript io.Reader, times []int64) ([]rundir.Step, error) {
		return launch.DecodeTranscript(transcript, times, k.Steps())
	}
}

// unwarmed is an agent whose native binary needs no warm-up.
type unwarmed struct{ runner.Agent }

func (unwarmed) Warm(context.Context, ...runner.MCPServer) error { return nil }
func (unwarmed) Close() error                                    { return nil }
