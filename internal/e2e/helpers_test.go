//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench/internal/clitest"
	"github.com/pairbench/pairbench/internal/sandboxtest"
)

// This file holds what the system tests share beyond internal/clitest
// (which cmd/pairbench's tests share too): running the built binary, a bench
// as a subprocess, and waiting on what it does.

// repoRoot is the checkout, seen from this package's directory.
const repoRoot = "../.."

// runBin runs the built pairbench binary bin with args (AllowInconclusive
// adding --allow-inconclusive to a run) and returns its exit code and
// output.
func runBin(t *testing.T, bin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	return runProcess(t, exec.Command(bin, clitest.AllowInconclusive(args)...))
}

// runProcess runs cmd, which no signal may kill, and returns its exit code
// and output.
func runProcess(t *testing.T, cmd *exec.Cmd) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code, sig := clitest.ExitStatus(err)
	require.NotEqual(t, -2, code, "start %s: %v", cmd.Path, err)
	require.Zero(t, sig, "%s killed by a signal: %s", cmd.Path, errOut.String())
	return code, out.String(), errOut.String()
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
	cmd := exec.CommandContext(ctx, e.bin, clitest.AllowInconclusive(args)...)
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
	cmd := exec.CommandContext(ctx, e.bin, clitest.AllowInconclusive(args)...)
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
