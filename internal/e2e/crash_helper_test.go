//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench/artifacts"
	"github.com/pairbench/pairbench/bench"
	"github.com/pairbench/pairbench/bot"
	"github.com/pairbench/pairbench/rundir"
)

// This file holds the crash tests' runner: the test binary, re-executed,
// runs a bench (or a merge) through the engine `pairbench run` (`pairbench
// merge`) drives, the public bench package, and reports every step the
// bench passes (bench.Hooks.Step, the seam the engine offers to watch it)
// on a pipe. At the step the test aims at, it says so and stops there,
// blocked, until the test kills it with SIGKILL from outside: each kill
// lands exactly where it was aimed. Each run the kills interrupt ends with
// the real binary resuming it. Nothing of this is in the production code:
// it only offers the steps to watch.

// helperEnv carries a helperSpec to the re-executed test binary.
const helperEnv = "PAIRBENCH_CRASH_HELPER"

// helperSpec says what the helper runs and where it stops.
type helperSpec struct {
	// Bench is the bench to run, as `pairbench run` flags would set it;
	// Merge, when set, runs a merge instead.
	Bench *helperBench
	Merge *helperMerge
	// Kill is where to stop and wait to be killed (nil: run to the end).
	Kill *killPoint
}

// helperBench is a bench's flags.
type helperBench struct {
	Registry, RunID, RunsDir, TempDir, Tools, Store string
	Intents                                         []string
	Pairs, Slots, Adoption                          int
	Seed                                            uint64
}

// helperMerge is a merge's flags (`pairbench merge --store --run-id --out
// --trials`).
type helperMerge struct {
	Store, RunID, Out string
	Trials            bool
}

// killPoint is a step of the bench (or a merge's fetch, stepFetch), the
// nth time (from 1) it is passed with the matching arm and stage (empty:
// any) and a file ending in FileSuffix.
type killPoint struct {
	Step       bench.StepName
	Nth        int
	Arm, Stage string
	FileSuffix string
}

// stepFetch is a merge fetching one object of the run from the store.
const stepFetch bench.StepName = "fetch"

// reported is one line of the helper's step stream.
type reported struct {
	Step  bench.StepName `json:"step"`
	Trial string         `json:"trial,omitempty"` // the trial directory
	Arm   string         `json:"arm,omitempty"`
	Stage string         `json:"stage,omitempty"`
	File  string         `json:"file,omitempty"`
	// Kill is true on the step the helper was told to stop at.
	Kill bool `json:"kill,omitempty"`
}

// blocking reports whether the helper stops inside the step (the bench
// blocked there), or reports it and goes on, for a step whose work comes
// after it (the smoke gate's checks, the warm-up): the kill lands during
// that work.
func blocking(s bench.StepName) bool {
	return s != bench.StepSmokeGate && s != bench.StepWarmUp
}

// runHelper runs the helper described in the environment and returns its
// exit code; its steps go to file descriptor 3.
func runHelper() int {
	var spec helperSpec
	if err := json.Unmarshal([]byte(os.Getenv(helperEnv)), &spec); err != nil {
		fmt.Fprintln(os.Stderr, "crash helper:", err)
		return 2
	}
	out := os.NewFile(3, "steps")
	var mu sync.Mutex
	seen := 0
	report := func(r reported) {
		mu.Lock()
		k := spec.Kill
		hit := k != nil && r.Step == k.Step && (k.Arm == "" || k.Arm == r.Arm) &&
			(k.Stage == "" || k.Stage == r.Stage) && strings.HasSuffix(r.File, k.FileSuffix)
		if hit {
			seen++
			hit = seen == k.Nth
		}
		r.Kill = hit
		b, _ := json.Marshal(r)
		out.Write(append(b, '\n'))
		mu.Unlock()
		if hit && blocking(r.Step) {
			select {} // killed here
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log, _ := bot.NewLogger(os.Stderr, "text")
	var err error
	switch {
	case spec.Merge != nil:
		m := spec.Merge
		var store artifacts.Store
		if store, err = artifacts.Open(ctx, m.Store); err == nil {
			var warnings []rundir.Problem
			_, warnings, err = bench.Merge(ctx, watchedStore{Store: store, report: report}, m.RunID, rundir.RunDir{Path: m.Out}, m.Trials)
			for _, w := range warnings {
				log.Warn(w.String())
			}
		}
	default:
		// The bench `pairbench run` runs with these flags and
		// --example-sites --start-delay 0 --allow-inconclusive.
		b := spec.Bench
		c := bench.DefaultConfig()
		c.Registry, c.RunID, c.RunsDir, c.TempDir, c.Tools, c.Store = b.Registry, b.RunID, b.RunsDir, b.TempDir, b.Tools, b.Store
		c.Intents, c.Pairs, c.Slots, c.Adoption, c.Seed = b.Intents, b.Pairs, b.Slots, b.Adoption, b.Seed
		c.ExampleSites, c.StartDelay = true, 0
		c.Chromium, c.Browser.Provider = os.Getenv(bench.ChromiumEnv), bench.BrowserLocal
		c.Log = log
		c.Hooks.Step = func(s bench.Step) {
			r := reported{Step: s.Name, File: s.File}
			if s.Trial != nil {
				r.Trial, r.Arm, r.Stage = s.Trial.Dir, string(s.Trial.Arm), string(s.Trial.Job.Stage)
			}
			report(r)
		}
		if err = c.Browser.FromHost(os.Getenv, ""); err == nil {
			if err = c.Complete(); err == nil {
				_, err = bench.Bench(ctx, c)
			}
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "crash helper:", err)
		return 1
	}
	return 0
}

// watchedStore reports each object a merge fetches.
type watchedStore struct {
	artifacts.Store
	report func(reported)
}

func (w watchedStore) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	w.report(reported{Step: stepFetch, File: key})
	return w.Store.Get(ctx, key)
}

// helperRun is one started helper.
type helperRun struct {
	cmd    *exec.Cmd
	steps  chan reported // closed when the helper's pipe closes
	log    string
	exited chan error
}

// startHelper starts the test binary as a helper for spec, its output in a
// log file under logs.
func startHelper(t *testing.T, ctx context.Context, logs string, n int, spec helperSpec) *helperRun {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	b, err := json.Marshal(spec)
	require.NoError(t, err)
	r, w, err := os.Pipe()
	require.NoError(t, err)
	logPath := filepath.Join(logs, fmt.Sprintf("%02d.log", n))
	logf, err := os.Create(logPath)
	require.NoError(t, err)
	cmd := exec.CommandContext(ctx, exe)
	cmd.Env = append(os.Environ(), helperEnv+"="+string(b))
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.ExtraFiles = []*os.File{w}
	require.NoError(t, cmd.Start())
	w.Close()
	logf.Close()
	h := &helperRun{cmd: cmd, steps: make(chan reported, 1024), log: logPath, exited: make(chan error, 1)}
	go func() {
		defer close(h.steps)
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			var rep reported
			if json.Unmarshal(sc.Bytes(), &rep) == nil {
				h.steps <- rep
			}
		}
		r.Close()
	}()
	go func() { h.exited <- cmd.Wait() }()
	return h
}
