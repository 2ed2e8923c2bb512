package main

import (
	"context"
	"flag"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var (
	crashKills = flag.Int("crash.kills", 3, "SIGKILL points TestCrashResume tries before letting the run finish")
	crashSeed  = flag.Uint64("crash.seed", 1, "seed of TestCrashResume's kill points")
)

// TestCrashResume kills the real runner with SIGKILL at random points of a
// small bench (2 intents × 3 pairs over 2 slots), resuming with the same run
// id each time, then lets it finish. Nothing a killed runner started may
// outlive it; in the end every pair is scored exactly once, no row is lost
// or duplicated, the report is built and no per-trial directory is left.
//
//	go test ./cmd/pairbench -run TestCrashResume -crash.kills 12 -v
func TestCrashResume(t *testing.T) {
	tools := needRealStack(t)
	bin := buildPairbench(t)
	becomeSubreaper(t)
	ctx, cancel := context.WithTimeout(t.Context(), 9*time.Minute)
	defer cancel()

	e := newBenchEnv(t, bin, tools, "crash",
		"--intent", "weather-high-oslo", "--intent", "books-count-by-author", "--pairs", "3", "--slots", "2")
	rng := rand.New(rand.NewPCG(*crashSeed, 0))
	killed := 0
	for range *crashKills {
		// Kill points spread over start-up (the agent's warm-up), the smoke
		// gate and the trials (a run takes about 15 s here, a trial 2-5 s).
		after := 300*time.Millisecond + time.Duration(rng.Int64N(int64(10*time.Second)))
		cmd, log := e.start(t, ctx)
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		select {
		case err := <-exited:
			code, _ := exitStatus(err)
			require.Zero(t, code, "run %d ended on its own before its kill point: %s", e.n, tail(log))
			t.Logf("run %d finished before its kill point (%v); no more kills", e.n, after)
		case <-time.After(after):
			require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
			<-exited
			killed++
			rows := countLines(filepath.Join(e.runDir(), "rows.jsonl"))
			t.Logf("run %d killed after %v (%d rows on disk, %d per-trial directories left)", e.n, after, rows, len(e.leftDirs(t)))
			waitNoOrphans(t, 15*time.Second)
			continue
		}
		break
	}

	cmd, log := e.start(t, ctx)
	err := cmd.Wait()
	code, sig := exitStatus(err)
	require.Zero(t, code, "final run (signal %v): %s", sig, tail(log))
	t.Logf("SIGKILL points tried: %d (seed %d); runs: %d", killed, *crashSeed, e.n)

	rows := checkCompleteRun(t, e.runDir())
	t.Logf("rows: %d for 12 planned trials", len(rows))
	waitNoOrphans(t, 15*time.Second)
	assert.Empty(t, e.leftDirs(t), "per-trial directories left in --temp-dir")
}

// TestSIGTERMShutsDownCleanly sends SIGTERM while trials run: the runner
// exits 143 having stopped its agents and browsers and removed their
// directories itself, and a resume finishes the run.
func TestSIGTERMShutsDownCleanly(t *testing.T) {
	tools := needRealStack(t)
	bin := buildPairbench(t)
	becomeSubreaper(t)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()

	e := newBenchEnv(t, bin, tools, "term", "--intent", "weather-high-oslo", "--pairs", "2", "--slots", "2")
	cmd, log := e.start(t, ctx)
	// Wait until trials are under way: a browser's sandbox exists (its
	// home holds the browser's DevTools socket).
	require.Eventually(t, func() bool {
		for _, d := range e.leftDirs(t) {
			if _, err := os.Stat(filepath.Join(e.temp, d, "home", "devtools.sock")); err == nil {
				_, err := os.Stat(filepath.Join(e.runDir(), "run.json"))
				return err == nil
			}
		}
		return false
	}, 2*time.Minute, 50*time.Millisecond, "no trial started: %s", tail(log))
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	code, sig := exitStatus(cmd.Wait())
	assert.Equal(t, exitSIGTERM, code, "exit status (signal %v): %s", sig, tail(log))
	assert.Contains(t, tail(log), "stopped by terminated")
	// The runner cleaned up after itself: nothing for a successor to do.
	assert.Empty(t, liveOrphans(), "processes outlived a runner that shut down")
	assert.Empty(t, e.leftDirs(t), "directories left by a runner that shut down")

	cmd, log = e.start(t, ctx)
	code, sig = exitStatus(cmd.Wait())
	require.Zero(t, code, "resume (signal %v): %s", sig, tail(log))
	checkCompleteRun(t, e.runDir())
	assert.Empty(t, e.leftDirs(t))
}

// countLines counts the newline-terminated lines of a file (0 when absent).
func countLines(path string) int {
	b, _ := os.ReadFile(path)
	n := 0
	for _, c := range b {
		if c == '\n' {
			n++
		}
	}
	return n
}

// TestLiveOrphansSeesWhatADeadParentLeft checks the crash tests' process
// check itself: a process whose parent died without killing it is found.
func TestLiveOrphansSeesWhatADeadParentLeft(t *testing.T) {
	becomeSubreaper(t)
	marker := "7321.5" // a sleep length nothing else uses
	out, err := exec.Command("/bin/sh", "-c", "sleep "+marker+" >/dev/null 2>&1 & echo $!").Output()
	require.NoError(t, err)
	pid := strings.TrimSpace(string(out))
	t.Cleanup(func() { exec.Command("kill", "-9", pid).Run() })

	left := liveOrphans()
	require.Len(t, left, 1)
	assert.Equal(t, pid+" sleep "+marker+" ", left[0])
}
