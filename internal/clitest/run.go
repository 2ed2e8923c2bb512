package clitest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/rundir"
	"github.com/pairbench/pairbench/state/statetest"
)

// ExitStatus returns how a finished command ended: its exit code, or -1
// and the signal that killed it.
func ExitStatus(err error) (int, syscall.Signal) {
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

// BecomeSubreaper makes this process the reaper of its orphaned
// descendants, so whatever a killed runner leaves running becomes a child
// of the test, where LiveOrphans finds it.
func BecomeSubreaper(t *testing.T) {
	t.Helper()
	require.NoError(t, unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0))
	t.Cleanup(func() { unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0) })
}

// LiveOrphans lists the live children of this process other than those in
// keep and the PostgreSQL server a test started, as "pid cmdline". A zombie
// is not live, nor is a process already exiting: its memory is gone (the
// kernel shows an empty command line), so it was killed and can run no more
// code; only reaping it is left.
func LiveOrphans(keep ...int) []string {
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

// OrphanGrace bounds how long what a killed or stopped runner started may
// take to die on its own: its lifelines fire at once, but a busy machine
// is slow to tear a sandboxed Chromium down. WaitNoOrphans returns as soon
// as nothing is left, so the bound costs a passing test nothing.
const OrphanGrace = time.Minute

// WaitNoOrphans waits until no descendant of a killed runner is alive: the
// browsers and sandboxes must die with their runner on their own.
func WaitNoOrphans(t *testing.T, within time.Duration, keep ...int) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		left := LiveOrphans(keep...)
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

// ReadRows reads a rows file.
func ReadRows(t *testing.T, name string) []pairbench.Row {
	t.Helper()
	f, err := os.Open(name)
	require.NoError(t, err)
	defer f.Close()
	rows, _, err := pairbench.ReadRows(f)
	require.NoError(t, err)
	return rows
}

// CheckCompleteRun asserts what a finished run must hold whatever happened
// to its runners: every planned pair in force (all of them, or those of the
// looks up to the one the run stopped at) complete in exactly one attempt (both
// arms scored, the last attempt), attempts numbered 1, 2, ... with the arms
// of each in the pair's order, every row parseable and recorded once with
// its own trial directory, and a report counting every pair complete. It
// returns the rows.
func CheckCompleteRun(t *testing.T, dir string) []pairbench.Row {
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
