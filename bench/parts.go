package bench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/pairbench/pairbench/rundir"

	"github.com/pairbench/pairbench/agent"
	"github.com/pairbench/pairbench/agent/launch"
	"github.com/pairbench/pairbench/agent/pi"
	"github.com/pairbench/pairbench/browser/local"
	"github.com/pairbench/pairbench/examples/site"
	"github.com/pairbench/pairbench/intents"
	"github.com/pairbench/pairbench/model"
	"github.com/pairbench/pairbench/runner"
	"github.com/pairbench/pairbench/sandbox"
)

// This file wires the runner to its parts: the agent (by name, through
// agent, where another agent is added), the browsers (local
// Chromium, or a cloud service's: browsers.go) and the scripted model.

// ScriptedModel names pairbench's own scripted model where a model is
// named (the --model flag, a /bench command).
const ScriptedModel = "scripted"

// ParseModel reads a model's name: ScriptedModel for the scripted model,
// else provider/id, priced by the agent; baseURL overrides the provider's
// endpoint.
func ParseModel(name, baseURL string) (rundir.Model, error) {
	if name == ScriptedModel {
		return rundir.Model{Provider: "pairbench", ID: "pairbench-scripted", Scripted: true,
			KeyEnv: "PAIRBENCH_MODEL_KEY", InputPrice: 3, OutputPrice: 15}, nil
	}
	provider, id, ok := strings.Cut(name, "/")
	if !ok || provider == "" || id == "" {
		return rundir.Model{}, fmt.Errorf("--model %q: want %s or provider/id (e.g. openai/gpt-5.4-mini)", name, ScriptedModel)
	}
	return rundir.Model{Provider: provider, ID: id, BaseURL: baseURL}, nil
}

// tools are the pinned Node tools the agent and its browser control run on.
type tools struct{ launch.Tools }

func newTools(nodeModules string) tools { return tools{launch.Tools{NodeModules: nodeModules}} }

// versions records what every trial of the named agent depends on, for
// run.json.
func (t tools) versions(ctx context.Context, name string, browsers Browsers, chromium string) (rundir.Versions, error) {
	v := rundir.Versions{Pairbench: Version(), AgentName: name}
	var err error
	if v.Agent, err = launch.PackageVersion(agent.Package(name, t.Tools)); err != nil {
		return v, toolsMissing(name, t.NodeModules, err)
	}
	if v.PlaywrightMCP, err = launch.PackageVersion(t.PlaywrightMCP()); err != nil {
		return v, toolsMissing("Playwright MCP", t.NodeModules, err)
	}
	out, err := exec.CommandContext(ctx, t.Node(), "--version").Output()
	if err != nil {
		return v, toolsMissing("Node 22", t.NodeModules, err)
	}
	v.Node = strings.TrimSpace(string(out))
	if browsers.remote() {
		// The service's browsers are the service's; run.json's browser
		// policy names it.
		v.Chromium = browsers.Provider
		return v, nil
	}
	if err := local.CheckBinary(chromium); err != nil {
		return v, err
	}
	out, err = exec.CommandContext(ctx, chromium, "--version").Output()
	if err != nil {
		return v, fmt.Errorf("chromium: %s --version: %w (install Chromium, or give its binary with --chromium PATH)", chromium, err)
	}
	v.Chromium = strings.TrimSpace(string(out))
	return v, nil
}

// startParts starts the scripted model when the plan names it, and readies
// the agent, the browsers and the trials.
func (r *Run) startParts(ctx context.Context, t tools, tis map[string]*runner.TrialIntent) error {
	scriptedURL := ""
	if r.plan.Model.Scripted || r.plan.Judge != nil && r.plan.Judge.Model.Scripted {
		var known []intents.Intent
		for _, ti := range tis {
			known = append(known, ti.Intent)
		}
		addr, stop, err := ServeLoopback(model.New(known, model.Options{Logger: r.log}))
		if err != nil {
			return fmt.Errorf("scripted model: %w", err)
		}
		r.onClose(func() error { stop(); return nil })
		scriptedURL = "http://" + addr + "/v1"
	}
	if r.plan.Model.Scripted {
		r.plan.Model.BaseURL = scriptedURL
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	a, err := agent.New(r.agentName, agent.Config{Tools: t.Tools, HostEnv: os.Environ(), Executable: exe,
		TempRoot: r.cfg.TempDir, Log: r.log})
	if err != nil {
		return err
	}
	r.agent = a
	r.onClose(a.Close)
	browsers, err := r.startBrowsers()
	if err != nil {
		return err
	}
	settle, delay := r.trialTimes()
	r.trials = &runner.Trials{RunDir: r.dir, Plan: r.plan, Intents: tis, Browsers: browsers, Agent: a,
		BrowserMCP: t.BrowserMCP(settle), StartDelay: delay, Log: r.log}
	if r.plan.Judge != nil {
		r.trials.Judge = launch.NewJudge(launch.JudgeConfig{HostEnv: os.Environ(), ScriptedURL: scriptedURL, TempRoot: r.cfg.TempDir, Log: r.log})
	}
	return nil
}

// browserConfig is the browser provider's configuration: the run's hosts,
// one spare per slot.
func (r *Run) browserConfig() local.Config {
	return local.Config{ChromiumPath: r.cfg.Chromium, Hosts: r.hosts, CACerts: r.cfg.CACerts, TempDir: r.cfg.TempDir, Log: r.log, Spares: r.cfg.Slots}
}

// serveExampleSites serves the example sites on loopback until Close, in
// place of the configured hosts.
func (r *Run) serveExampleSites() error {
	addr, stop, err := ServeLoopback(site.New())
	if err != nil {
		return fmt.Errorf("example sites: %w", err)
	}
	r.onClose(func() error { stop(); return nil })
	r.hosts = map[string]string{}
	for _, h := range site.Hosts() {
		r.hosts[h] = addr
	}
	return nil
}

// leftoverGrace is how old a directory still being made (heldir's hidden
// name, not locked yet) must be before it counts as a killed runner's; an
// unheld directory under its own name is one already.
const leftoverGrace = 5 * time.Second

// cleanLeftovers kills the sandboxes a killed runner stranded in their
// setup and removes the sandbox (agents' and browsers'), egress and
// compile cache directories in the temporary directory that no live runner
// holds.
func (r *Run) cleanLeftovers() {
	stranded, err0 := sandbox.KillStranded()
	if len(stranded) > 0 {
		r.log.Info("killed sandboxes a killed runner left in their setup", "pids", stranded)
	}
	dir, cutoff := r.cfg.TempDir, time.Now().Add(-leftoverGrace)
	sandboxes, err1 := sandbox.CleanStale(dir, cutoff)
	caches, err2 := pi.CleanStale(dir, cutoff)
	gates, err3 := launch.CleanStale(dir, cutoff)
	smokes, err4 := runner.CleanStale(dir, cutoff)
	guards, err5 := local.CleanStale(dir, cutoff)
	if n := len(sandboxes) + len(caches) + len(gates) + len(smokes) + len(guards); n > 0 {
		r.log.Info("removed directories left by killed runners", "sandbox", len(sandboxes),
			"compile-cache", len(caches), "model-gate", len(gates), "smoke", len(smokes), "devtools-guard", len(guards), "dir", dir)
	}
	if err := errors.Join(err0, err1, err2, err3, err4, err5); err != nil {
		r.problem(rundir.Problem{Msg: "could not remove every directory left by killed runners", Attrs: []any{"err", err}})
	}
}

// ServeLoopback serves h on a free loopback port until stop is called.
func ServeLoopback(h http.Handler) (addr string, stop func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ln)
	}()
	return ln.Addr().String(), func() {
		srv.Close()
		<-done
	}, nil
}

// trialTimes are the settle wait and start delay the run's trials use: the
// plan's (a run resumed with --force keeps its own), or the configured ones
// for a plan from before runs froze them.
func (r *Run) trialTimes() (settle, delay time.Duration) {
	if t := r.plan.Trial; t != nil {
		return time.Duration(t.SettleMS) * time.Millisecond, time.Duration(t.StartDelayMS) * time.Millisecond
	}
	return r.cfg.Settle, r.cfg.StartDelay
}
