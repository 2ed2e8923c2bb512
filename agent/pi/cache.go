package pi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/pairbench/pairbench/agent/launch"
	"github.com/pairbench/pairbench/internal/heldir"
	"github.com/pairbench/pairbench/rundir"
	"github.com/pairbench/pairbench/runner"
	"github.com/pairbench/pairbench/sandbox"
)

// cachePrefix names the compile-cache directories Warm creates; each is
// held (flocked) while its agent lives, so CleanStale can tell a killed
// runner's from a live one's.
const cachePrefix = "pairbench-node-cache-"

// warmTimeout bounds the warm-up run.
const warmTimeout = 60 * time.Second

// Warm fills a Node compile cache (V8 code for every module pi and the
// servers load) that every later Run mounts read-only. Without it each
// trial's Node processes compile the same modules again in their fresh
// sandbox, about 0.2 s of CPU per trial.
//
// The cache is written by a run no model or page can influence: pi, in a
// sandbox without network, with servers started as they are in trials
// (their CDP endpoints unreachable, so they only load), asked to reach a
// model that is not there, retries off. Trials only read it, so no agent
// can leave code for a later trial. Call Warm once, before the first
// trial; Close removes the cache.
func (a *Agent) Warm(ctx context.Context, servers ...runner.MCPServer) error {
	if a.cache != "" {
		return errors.New("pi: already warm")
	}
	dir, hold, err := heldir.Make(orTemp(a.cfg.TempRoot), cachePrefix)
	if err != nil {
		return fmt.Errorf("pi: compile cache: %w", err)
	}
	cache := filepath.Join(dir, "v8")
	if err := a.warm(ctx, cache, servers); err != nil {
		os.RemoveAll(dir)
		hold.Close()
		return err
	}
	a.cache, a.cacheDir, a.cacheHold = cache, dir, hold
	return nil
}

// warm runs the warm-up in a sandbox of its own and moves the cache its
// workspace received to cache, readable by every trial's sandbox user
// (under a root launcher each sandbox is an unprivileged user of its own).
func (a *Agent) warm(ctx context.Context, cache string, servers []runner.MCPServer) error {
	ctx, cancel := context.WithTimeout(ctx, warmTimeout)
	defer cancel()
	env := map[string]string{
		"PI_CODING_AGENT_DIR": agentDir, "PI_OFFLINE": "1", "PI_TELEMETRY": "0",
		"NODE_COMPILE_CACHE": sandbox.WorkspaceDir, "WARM_MODEL_KEY": "none",
	}
	// The cache is read from the workspace afterwards, so it must be the
	// host's: the warm-up runs no model and sees no page.
	p := a.policy(nil, env)
	p.Limits.WorkspaceSize = 0
	sb, err := sandbox.New(ctx, p)
	if err != nil {
		return fmt.Errorf("pi: warm-up: %w", err)
	}
	defer sb.Close()
	// Nothing listens in the sandbox's own network namespace: the model
	// request is refused at once.
	task := runner.AgentTask{Prompt: "warm-up", Model: rundir.Model{Provider: "warm", ID: "none",
		BaseURL: "http://127.0.0.1:9999/v1", KeyEnv: "WARM_MODEL_KEY"}}
	var services []sandbox.Service
	task.MCPServers, services = launch.BesideAgent(servers, nil)
	home := filepath.Join(sb.Home(), filepath.Base(agentDir))
	if err := writeAgentDir(home, task); err != nil {
		return fmt.Errorf("pi: warm-up: %w", err)
	}
	if err := os.WriteFile(filepath.Join(home, "settings.json"), []byte(`{"retry":{"enabled":false}}`), 0o644); err != nil {
		return fmt.Errorf("pi: warm-up: %w", err)
	}
	stderr := &launch.Tail{Max: 4 << 10}
	cmd := sb.Command(ctx, a.cfg.Node, append([]string{a.cli}, args(task)...)...)
	cmd.Stdout, cmd.Stderr = io.Discard, stderr
	cmd.Services = services
	runErr := cmd.Run() // pi fails, as it must without a model
	entries, err := os.ReadDir(sb.Workspace())
	if err != nil || len(entries) == 0 {
		return fmt.Errorf("pi: warm-up wrote no compile cache (%v): %s", runErr, launch.LastLine(stderr.String()))
	}
	if err := os.Rename(sb.Workspace(), cache); err != nil {
		return fmt.Errorf("pi: compile cache: %w", err)
	}
	return shareReadOnly(cache)
}

// shareReadOnly lets every user enter the cache's directory and read the
// tree under it (nothing is made writable); the trials mount it read-only.
func shareReadOnly(cache string) error {
	if err := os.Chmod(filepath.Dir(cache), 0o711); err != nil {
		return fmt.Errorf("pi: compile cache: %w", err)
	}
	return filepath.WalkDir(cache, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type()&fs.ModeSymlink != 0 {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		add := fs.FileMode(0o044)
		if d.IsDir() {
			add = 0o055
		}
		return os.Chmod(p, fi.Mode().Perm()|add)
	})
}

// CompileCache returns the directory Warm filled, or "" before Warm.
func (a *Agent) CompileCache() string { return a.cache }

// Close removes the compile cache Warm made. The agent runs on without it.
func (a *Agent) Close() error {
	if a.cache == "" {
		return nil
	}
	err := os.RemoveAll(a.cacheDir)
	a.cacheHold.Close()
	a.cache, a.cacheDir, a.cacheHold = "", "", nil
	return err
}

// CleanStale removes the compile-cache directories under root
// (/tmp when empty) that no live pairbench holds: those of killed
// runners, however young (heldir.Make holds one from the moment it has its
// name). It returns the directories removed.
func CleanStale(root string, cutoff time.Time) ([]string, error) {
	return heldir.Clean(orTemp(root), cutoff, nil, cachePrefix+"*")
}

// orTemp returns dir, or /tmp (where the sandbox makes its directories,
// whatever TMPDIR says: the warm-up's workspace is renamed into the cache).
func orTemp(dir string) string {
	if dir == "" {
		return "/tmp"
	}
	return dir
}
