package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/internal/realstack"
	"github.com/pairbench/pairbench/internal/sandboxtest"
	"github.com/pairbench/pairbench/rundir"
	"github.com/pairbench/pairbench/state/statetest"
)

// This file holds what the tests that run the real pairbench binary share:
// building it, running a bench as a subprocess, and checking what a run left
// on disk and in the process table.

// repoRoot is the checkout, seen from this package's directory.
const repoRoot = "../.."

// needRealStack is realstack.Need for a test that runs real benches, and
// returns the pinned Node tools' node_modules.
func needRealStack(t *testing.T) string {
	t.Helper()
	realstack.Need(t)
	return realstack.NodeModules(t)
}

// realBinary is the real pairbench binary, built once for all the tests of
// this test binary: a link takes tens of seconds on a busy machine, and
// every test of it would link the same bytes. TestMain removes it.
var realBinary struct {
	once sync.Once
	dir  string // where it was built
	path string
	err  error
}

// buildPairbench returns the real binary, building it on first use. The
// tests only run it; none may write beside it.
func buildPairbench(t *testing.T) string {
	t.Helper()
	realBinary.once.Do(func() {
		dir, err := os.MkdirTemp("", "pairbench-test-bin-")
		if err != nil {
			realBinary.err = err
			return
		}
		realBinary.dir = dir
		bin := filepath.Join(dir, "pairbench")
		if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
			realBinary.err = fmt.Errorf("go build: %w: %s", err, out)
			return
		}
		realBinary.path = bin
	})
	require.NoError(t, realBinary.err)
	return realBinary.path
}

// removeRealBinary removes what buildPairbench built, if anything.
func removeRealBinary() {
	if realBinary.dir != "" {
		os.RemoveAll(realBinary.dir)
	}
}

// deadlineContext is t.Context() ending a minute before the test binary's
// -timeout does, so that a test waiting on it for events (a runner
// reaching a step, a bench ending) fails with its own message and runs its
// cleanups, rather than dying in the timeout's panic. The waits of a real
// bench are bounded by the whole suite's timeout, never by a guess at how
// fast this machine is.
func deadlineContext(t *testing.T) context.Context {
	t.Helper()
	d, ok := t.Deadline()
	if !ok {
		return t.Context()
	}
	ctx, cancel := context.WithDeadline(t.Context(), d.Add(-time.Minute))
	t.Cleanup(cancel)
	return ctx
}

// awaitWhileRunning polls cond until it holds. It fails the test if the
// process cmd started ends first (a zombie until the test waits for it:
// cond can then never hold) or ctx ends, quoting the end of log.
func awaitWhileRunning(t *testing.T, ctx context.Context, cmd *exec.Cmd, log string, cond func() bool, what string) {
	t.Helper()
	for !cond() {
		if !alive(cmd.Process.Pid) {
			t.Fatalf("%s: the process ended first: %s", what, tail(log))
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s: not before the test's deadline: %s", what, tail(log))
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// alive reports whether pid runs (and is no zombie).
func alive(pid int) bool {
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] != 'Z'
}

// benchEnv is one bench's directories and fixed flags, resumable by
// running it again.
type benchEnv struct {
	bin, tools string
	runs, temp string // --runs-dir and --temp-dir
	logs       string // where each invocation's output goes
	runID      string
	args       []string // intents, pairs, slots and the like
	n          int      // invocations so far
	lastLog    string   // the log of the last invocation startArgs started
}

func newBenchEnv(t *testing.T, bin, tools, runID string, args ...string) *benchEnv {
	root := t.TempDir()
	e := &benchEnv{bin: bin, tools: tools, runID: runID, args: args,
		runs: filepath.Join(root, "runs"), temp: filepath.Join(sandboxtest.TempDir(t), "tmp"), logs: filepath.Join(root, "logs")}
	require.NoError(t, os.MkdirAll(e.temp, 0o755))
	require.NoError(t, os.MkdirAll(e.logs, 0o755))
	return e
}

// start starts `pairbench run` on the bench; its output goes to a log file
// whose path is returned.
func (e *benchEnv) start(t *testing.T, ctx context.Context) (*exec.Cmd, string) {
	t.Helper()
	e.n++
	logPath := filepath.Join(e.logs, fmt.Sprintf("%02d.log", e.n))
	logf, err := os.Create(logPath)
	require.NoError(t, err)
	defer logf.Close()
	args := append([]string{"run", filepath.Join(repoRoot, "examples", "registry"), "--example-sites",
		"--start-delay", "0", "--seed", "7", "--run-id", e.runID, "--runs-dir", e.runs,
		"--temp-dir", e.temp, "--tools", e.tools}, e.args...)
	cmd := exec.CommandContext(ctx, e.bin, allowInconclusive(args)...)
	cmd.Stdout, cmd.Stderr = logf, logf
	require.NoError(t, cmd.Start())
	return cmd, logPath
}

// startArgs starts the real binary with args, its output in a log file
// (e.lastLog).
func (e *benchEnv) startArgs(t *testing.T, ctx context.Context, args ...string) *exec.Cmd {
	t.Helper()
	e.n++
	e.lastLog = filepath.Join(e.logs, fmt.Sprintf("%02d.log", e.n))
	logf, err := os.Create(e.lastLog)
	require.NoError(t, err)
	defer logf.Close()
	cmd := exec.CommandContext(ctx, e.bin, allowInconclusive(args)...)
	cmd.Stdout, cmd.Stderr = logf, logf
	require.NoError(t, cmd.Start())
	return cmd
}

// runDir is the run's directory.
func (e *benchEnv) runDir() string { return filepath.Join(e.runs, e.runID) }

// tail returns the end of a log file, for failure messages.
func tail(path string) string {
	b, _ := os.ReadFile(path)
	if len(b) > 3000 {
		b = b[len(b)-3000:]
	}
	return string(b)
}

// becomeSubreaper makes this process the reaper of its orphaned
// descendants, so whatever a killed runner leaves running becomes a child
// of the test, where liveOrphans finds it.
func becomeSubreaper(t *testing.T) {
	t.Helper()
	require.NoError(t, unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0))
	t.Cleanup(func() { unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0) })
}

// liveOrphans lists the live children of this process other than those in
// keep and the PostgreSQL server a test started, as "pid cmdline". A zombie
// is not live, nor is a process already exiting: its memory is gone (the
// kernel shows an empty command line), so it was killed and can run no more
// code; only reaping it is left.
func liveOrphans(keep ...int) []string {
	keep = append(keep, statetest.ServerPID())
	self := os.Getpid()
	entries, _ := os.ReadDir("/proc")
	var out []string
	for _, ent := range entries {
		pid, err := strconv.Atoi(ent.Name())
		if err != nil || slices.Contains(keep, pid) {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", ent.Name(), "stat"))
		if err != nil {
			continue
		}
		s := string(stat)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:]) // state, ppid, ...
		if len(f) < 2 || f[0] == "Z" || f[1] != strconv.Itoa(self) {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", ent.Name(), "cmdline"))
		if len(cmdline) == 0 {
			continue
		}
		out = append(out, fmt.Sprintf("%d %s", pid, bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '})))
	}
	return out
}

// orphanGrace bounds how long what a killed or stopped runner started may
// take to die on its own: its lifelines fire at once, but a busy machine
// is slow to tear a sandboxed Chromium down. waitNoOrphans returns as soon
// as nothing is left, so the bound costs a passing test nothing.
const orphanGrace = time.Minute

// waitNoOrphans waits until no descendant of a killed runner is alive: the
// browsers and sandboxes must die with their runner on their own.
func waitNoOrphans(t *testing.T, within time.Duration, keep ...int) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		left := liveOrphans(keep...)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			assert.Empty(t, left, "processes outlived their runner by %v", within)
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// leftDirs lists the per-trial directories (sandbox, egress, browser
// profile) under the bench's temp dir.
func (e *benchEnv) leftDirs(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir(e.temp)
	require.NoError(t, err)
	var out []string
	for _, ent := range entries {
		if strings.HasPrefix(ent.Name(), "pairbench-") {
			out = append(out, ent.Name())
		}
	}
	return out
}

// exitStatus returns how a finished command ended: its exit code, or -1
// and the signal that killed it.
func exitStatus(err error) (int, syscall.Signal) {
	var ee *exec.ExitError
	if err == nil {
		return 0, 0
	}
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return -1, ws.Signal()
		}
		return ee.ExitCode(), 0
	}
	return -2, 0
}

// checkCompleteRun asserts what a finished run must hold whatever happened
// to its runners: every planned pair in force (all of them, or those of the
// looks up to the one the run stopped at) complete in exactly one attempt (both
// arms scored, the last attempt), attempts numbered 1, 2, ... with the arms
// of each in the pair's order, every row parseable and recorded once with
// its own trial directory, and a report counting every pair complete. It
// returns the rows.
func checkCompleteRun(t *testing.T, dir string) []pairbench.Row {
	t.Helper()
	plan, err := rundir.ReadPlan(filepath.Join(dir, "run.json"))
	require.NoError(t, err)
	f, err := os.Open(filepath.Join(dir, "rows.jsonl"))
	require.NoError(t, err)
	defer f.Close()
	rows, partial, err := pairbench.ReadRows(f)
	require.NoError(t, err)
	assert.Zero(t, partial, "a partial row is left in rows.jsonl")

	type key struct {
		intent string
		pair   int
	}
	byPair := map[key][]pairbench.Row{}
	dirs := map[string]bool{}
	for _, r := range rows {
		assert.False(t, dirs[r.TrialDir], "trial dir %s recorded twice", r.TrialDir)
		dirs[r.TrialDir] = true
		assert.DirExists(t, filepath.Join(dir, filepath.FromSlash(r.TrialDir)))
		if r.Stage == pairbench.StageAdoption {
			continue // a run with an adoption stage; its pairs are checked below
		}
		assert.Equal(t, pairbench.StagePair, r.Stage)
		byPair[key{r.Intent, r.Pair}] = append(byPair[key{r.Intent, r.Pair}], r)
	}

	planned := 0
	for _, p := range plan.PairsInForce() { // a run that stopped at a look ran those alone
		planned++
		k := key{p.Intent, p.Pair}
		prs := byPair[k]
		delete(byPair, k)
		if !assert.NotEmpty(t, prs, "pair %v has no rows", k) {
			continue
		}
		byAttempt := map[int][]pairbench.Row{}
		last := 0
		for _, r := range prs {
			byAttempt[r.Attempt] = append(byAttempt[r.Attempt], r)
			last = max(last, r.Attempt)
		}
		assert.Len(t, byAttempt, last, "pair %v: attempts not numbered 1..%d", k, last)
		complete := 0
		for a := 1; a <= last; a++ {
			trials := byAttempt[a]
			want := p.Order.Arms()
			scored := 0
			for i, r := range trials {
				if assert.Less(t, i, 2, "pair %v attempt %d: more than two trials", k, a) {
					assert.Equal(t, want[i], r.Arm, "pair %v attempt %d: arms out of order", k, a)
				}
				if r.Outcome.Scored() {
					scored++
				}
			}
			if len(trials) == 2 && scored == 2 {
				complete++
				assert.Equal(t, last, a, "pair %v: complete in attempt %d but ran again", k, a)
			}
		}
		assert.Equal(t, 1, complete, "pair %v: complete in %d attempts", k, complete)
	}

	assert.Empty(t, byPair, "rows of pairs that were never planned")

	var report struct {
		Intents []struct {
			ID    string `json:"id"`
			Pairs struct {
				Planned  int `json:"planned"`
				Complete int `json:"complete"`
			} `json:"pairs"`
		} `json:"intents"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "report.json"))
	require.NoError(t, err, "the final report")
	require.NoError(t, json.Unmarshal(b, &report))
	total := 0
	for _, in := range report.Intents {
		assert.Equal(t, in.Pairs.Planned, in.Pairs.Complete, "report: %s", in.ID)
		total += in.Pairs.Complete
	}
	assert.Equal(t, planned, total, "report counts every planned pair complete")
	assert.FileExists(t, filepath.Join(dir, "report.md"))
	return rows
}
