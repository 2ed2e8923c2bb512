//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/artifacts"
	"github.com/pairbench/pairbench/bench"
	"github.com/pairbench/pairbench/internal/clitest"
	"github.com/pairbench/pairbench/rundir"
)

var crashRounds = flag.Int("crash.rounds", 1, "how many times TestCrashResume aims at each of its kill points (1: each once, 16 kills; 5: 68 kills, give go test -timeout 60m)")

// crashPhase is one kill point of TestCrashResume: where the kill is aimed
// and how the test tells, afterwards, that it landed there.
type crashPhase struct {
	name string
	kill *killPoint
	// holdS3, instead of kill, holds the next S3 upload of a key ending in
	// it and kills the runner while the upload is in flight.
	holdS3 string
	// landed checks what the kill left: hit is the step the runner stopped
	// at (for holdS3, the held key in File), after the steps it reported
	// after it, before it died.
	landed func(t *testing.T, c *crashRun, hit reported, after []reported)
}

// crashRun is the state of one TestCrashResume.
type crashRun struct {
	e      *benchEnv
	bench  helperBench
	store  artifacts.Store // the bucket itself, not through the proxy
	proxy  *faultProxy
	keep   []int // processes of the test's own (the S3 server)
	counts map[string]int
	order  []string
	left   []string // per-trial directories a killed runner left
	// removed counts the directories killed runners left that the next
	// runner removed.
	removed int
	// kept is every row a killed runner left on disk, by trial directory:
	// each must be in the final rows as it was.
	kept    map[string]pairbench.Row
	started time.Time
}

// TestCrashResume kills the runner with SIGKILL at points chosen by its
// own progress (the steps bench.Hooks.Step reports), each kill landing
// where it was aimed (the test checks what it left): while the smoke gate
// runs, before and after run.json is frozen, during an adoption trial,
// during the agent's warm-up, mid-trial in each arm, between a trial's end
// and its row's fsync, right after a row, during an upload to S3 (its bytes
// being read, and in flight, held by a proxy) and to a directory store (its
// temporary file written), while the report is written and while merge
// fetches the run. A resume follows every kill. After every kill nothing
// the runner started is alive and its run lock is free; the per-trial
// directories it left (a mid-trial kill always leaves the trial's sandbox)
// are gone once the next runner started. In the end every pair is scored
// exactly once, every row a killed runner left is kept as it was and none
// is duplicated, the report is whole (the report of every row, as a fresh
// one written from the directory) and published, no directory is left,
// the store holds the same run as the directory, and a merge of the store
// gives the same report. The output lists each phase and the kills that
// landed in it.
//
//	go test -tags e2e ./internal/e2e -run TestCrashResume -v                   # each phase once: 16 kills
//	go test -tags e2e ./internal/e2e -timeout 60m -run TestCrashResume -crash.rounds 5 -v   # the long form: 68 kills
func TestCrashResume(t *testing.T) {
	tools := clitest.RealStack(t)
	clitest.BecomeSubreaper(t)
	rounds := max(*crashRounds, 1)
	ctx := deadlineContext(t)

	proxy, loc, direct, s3 := faultyS3(t, "crash")

	// Enough pairs that every kill finds a trial to land in: each round
	// of trial kills takes a few trials, and the rest run at the end.
	pairs := 2 + 2*rounds
	reg, err := filepath.Abs(filepath.Join(repoRoot, "examples", "registry"))
	require.NoError(t, err)
	e := newBenchEnv(t, clitest.Build(t), tools, "crash")
	c := &crashRun{e: e, store: direct, proxy: proxy, keep: []int{s3}, counts: map[string]int{}, started: time.Now(),
		bench: helperBench{Registry: reg, RunID: "crash", RunsDir: e.runs, TempDir: e.temp, Tools: tools, Store: loc,
			Intents: []string{"weather-high-oslo", "books-count-by-author"}, Pairs: pairs, Slots: 2, Adoption: 1, Seed: 7}}

	var schedule []crashPhase
	for range rounds {
		schedule = append(schedule, phaseSmokeGate, phaseFreezing)
	}
	schedule = append(schedule, phaseFrozen)
	for range rounds {
		schedule = append(schedule, phaseAdoption)
	}
	for range rounds {
		schedule = append(schedule, phaseWarmUp, phaseAgent("control"), phaseAgent("treatment"), phaseTrialEnd, phaseRow,
			phaseUploadS3, phaseUploadHeld)
	}
	for range rounds {
		schedule = append(schedule, phaseReport)
	}
	for _, p := range schedule {
		c.kill(t, ctx, p)
	}

	// The last runner, the real binary, finishes the run.
	final := e.startArgs(t, ctx, "run", reg, "--example-sites", "--start-delay", "0", "--seed", "7", "--run-id", "crash",
		"--runs-dir", e.runs, "--temp-dir", e.temp, "--tools", tools, "--store", loc, "--adoption", "1", "--slots", "2",
		"--pairs", fmt.Sprint(pairs), "--intent", "weather-high-oslo", "--intent", "books-count-by-author")
	code, sig := clitest.ExitStatus(final.Wait())
	require.Zero(t, code, "final run (signal %v): %s", sig, tail(e.lastLog))
	c.noneLeft(t)
	assert.Empty(t, e.leftDirs(t), "the final runner left directories")
	rows := clitest.CheckCompleteRun(t, e.runDir())
	reportIsTheRows(t, e.runDir())
	c.keptRows(t)
	c.storeIsTheDirectory(t)

	// Merge the stored run with its trials (a few hundred objects), killed
	// while it fetches: first the plan and rows, then ever later among the
	// trial files. Then to its end.
	out := filepath.Join(t.TempDir(), "merged")
	merge := helperMerge{Store: loc, RunID: "crash", Out: out, Trials: true}
	for i := range rounds + 1 {
		c.killMerge(t, ctx, merge, 1+7*i)
	}
	final = e.startArgs(t, ctx, "merge", "--store", loc, "--run-id", "crash", "--out", out, "--trials", "--report", "--link-ttl", "1h")
	code, sig = clitest.ExitStatus(final.Wait())
	require.Zero(t, code, "the merge after its kills (signal %v): %s", sig, tail(e.lastLog))
	want, err := os.ReadFile(filepath.Join(e.runDir(), "report.json"))
	require.NoError(t, err)
	got, err := os.ReadFile(filepath.Join(out, "report.json"))
	require.NoError(t, err)
	assert.JSONEq(t, string(want), string(got), "the merged run reports as the run does")

	// The same with a store that is a directory: killed while it takes
	// an upload (its temporary file written, not yet renamed into place)
	// and while the report is written.
	localStore := filepath.Join(t.TempDir(), "store")
	ls, err := artifacts.Open(t.Context(), localStore)
	require.NoError(t, err)
	le := newBenchEnv(t, e.bin, tools, "crash-local")
	le.n = e.n
	lc := &crashRun{e: le, store: ls, proxy: proxy, keep: c.keep, counts: c.counts, order: c.order, started: c.started,
		bench: helperBench{Registry: reg, RunID: "crash-local", RunsDir: le.runs, TempDir: le.temp, Tools: tools, Store: localStore,
			Intents: []string{"weather-high-oslo"}, Pairs: 1, Slots: 1, Seed: 7}}
	for range rounds {
		lc.kill(t, ctx, phaseUploadLocal)
	}
	lc.kill(t, ctx, phaseReport)
	final = le.startArgs(t, ctx, "run", reg, "--example-sites", "--start-delay", "0", "--seed", "7", "--run-id", "crash-local",
		"--runs-dir", le.runs, "--temp-dir", le.temp, "--tools", tools, "--store", localStore, "--slots", "1",
		"--pairs", "1", "--intent", "weather-high-oslo")
	code, sig = clitest.ExitStatus(final.Wait())
	require.Zero(t, code, "final run with a directory store (signal %v): %s", sig, tail(le.lastLog))
	lc.noneLeft(t)
	assert.Empty(t, le.leftDirs(t), "the final runner left directories")
	clitest.CheckCompleteRun(t, le.runDir())
	reportIsTheRows(t, le.runDir())
	lc.keptRows(t)
	lc.storeIsTheDirectory(t)
	noTempFiles(t, localStore)
	c.counts, c.order, c.removed = lc.counts, lc.order, c.removed+lc.removed
	// Mid-trial kills leave the trial's sandbox: the check that the next
	// runner removes what a killed one left did not pass for want of any.
	assert.Positive(t, c.removed, "no killed runner left a directory to remove")

	total := 0
	for _, name := range c.order {
		t.Logf("kills %-34s %d", name, c.counts[name])
		total += c.counts[name]
	}
	t.Logf("kills in all: %d in %d phases (rounds %d, %d pairs × 2 intents, %d rows); %d directories left by killed runners, removed by the next; %s",
		total, len(c.order), rounds, pairs, len(rows), c.removed, time.Since(c.started).Round(time.Second))
}

// next numbers the next runner started.
func (c *crashRun) next() int { c.e.n++; return c.e.n }

// kill starts a runner aimed at p, kills it where p says, and checks that
// the kill landed there and that nothing of the runner is left.
func (c *crashRun) kill(t *testing.T, ctx context.Context, p crashPhase) {
	t.Helper()
	if p.holdS3 != "" {
		c.proxy.holdNext(p.holdS3)
	}
	h := startHelper(t, ctx, c.e.logs, c.next(), helperSpec{Bench: &c.bench, Kill: p.kill})
	hit, ok := c.await(t, ctx, h, p)
	if !ok {
		return
	}
	require.NoError(t, h.cmd.Process.Signal(syscall.SIGKILL))
	<-h.exited
	var after []reported
	for r := range h.steps {
		after = append(after, r)
	}
	p.landed(t, c, hit, after)
	c.record(t, p.name)
	c.afterKill(t)
}

// await reads the runner's steps until it reaches p's kill point; on the
// way, at its first step, the directories the last killed runner left must
// be gone (the runner removed them when it started).
func (c *crashRun) await(t *testing.T, ctx context.Context, h *helperRun, p crashPhase) (reported, bool) {
	t.Helper()
	first := true
	for {
		select {
		case r, open := <-h.steps:
			if !open {
				code, _ := clitest.ExitStatus(<-h.exited)
				t.Fatalf("runner %d ended (exit %d) before it reached its kill point %s: %s", c.e.n, code, p.name, tail(h.log))
				return reported{}, false
			}
			if first {
				first = false
				c.noneLeft(t)
			}
			if r.Kill {
				return r, true
			}
		case key := <-c.proxy.held:
			return reported{Step: "upload-s3", File: key}, true
		case <-ctx.Done():
			h.cmd.Process.Kill()
			t.Fatalf("runner %d never reached %s before the test's deadline: %s", c.e.n, p.name, tail(h.log))
			return reported{}, false
		}
	}
}

func (c *crashRun) record(t *testing.T, name string) {
	t.Logf("runner %d killed: %s (at %s)", c.e.n, name, time.Since(c.started).Round(100*time.Millisecond))
	if c.counts[name] == 0 {
		c.order = append(c.order, name)
	}
	c.counts[name]++
}

// afterKill checks what a killed runner leaves: no process of it alive,
// its run lock free; and remembers its per-trial directories, which the
// next runner must remove.
func (c *crashRun) afterKill(t *testing.T) {
	t.Helper()
	// Also a sandbox being set up at the kill: its lifeline ends it.
	clitest.WaitNoOrphans(t, clitest.OrphanGrace, c.keep...)
	if f, err := os.OpenFile(filepath.Join(c.e.runDir(), ".lock"), os.O_RDWR, 0); err == nil {
		assert.NoError(t, unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB), "the run's lock died with its runner")
		f.Close()
	}
	c.left = c.e.leftDirs(t)
	if c.kept == nil {
		c.kept = map[string]pairbench.Row{}
	}
	maps.Copy(c.kept, c.rowsByDir(t))
}

// keptRows checks that every row a killed runner left is in the run's rows
// as it was: a kill loses only what was not on disk yet.
func (c *crashRun) keptRows(t *testing.T) {
	t.Helper()
	final := c.rowsByDir(t)
	for dir, r := range c.kept {
		assert.Equal(t, r, final[dir], "the row of %s, on disk after a kill, is kept", dir)
	}
}

// noneLeft checks that none of the directories the last killed runner left
// is there any more.
func (c *crashRun) noneLeft(t *testing.T) {
	t.Helper()
	for _, d := range c.left {
		if assert.NoDirExists(t, filepath.Join(c.e.temp, d), "left by runner %d and not removed when the next started", c.e.n-1) {
			c.removed++
		}
	}
	c.left = nil
}

// killMerge kills a merge of the stored run as it fetches its nth object.
func (c *crashRun) killMerge(t *testing.T, ctx context.Context, o helperMerge, nth int) {
	t.Helper()
	p := crashPhase{name: "merge, fetching from the store", kill: &killPoint{Step: stepFetch, Nth: nth}}
	h := startHelper(t, ctx, c.e.logs, c.next(), helperSpec{Merge: &o, Kill: p.kill})
	hit, ok := c.await(t, ctx, h, p)
	if !ok {
		return
	}
	require.NoError(t, h.cmd.Process.Signal(syscall.SIGKILL))
	<-h.exited
	assert.FileExists(t, filepath.Join(o.Out, ".fetching"), "killed fetching %s: the merge is marked unfinished", hit.File)
	assert.NoFileExists(t, filepath.Join(o.Out, "report.json"))
	c.record(t, p.name)
	clitest.WaitNoOrphans(t, clitest.OrphanGrace, c.keep...)
}

// rowsByDir reads the run's rows, by trial directory.
func (c *crashRun) rowsByDir(t *testing.T) map[string]pairbench.Row {
	t.Helper()
	out := map[string]pairbench.Row{}
	f, err := os.Open(filepath.Join(c.e.runDir(), "rows.jsonl"))
	if os.IsNotExist(err) {
		return out
	}
	require.NoError(t, err)
	defer f.Close()
	rows, partial, err := pairbench.ReadRows(f)
	require.NoError(t, err, "the rows file parses after every kill")
	assert.Zero(t, partial, "no torn row")
	for _, r := range rows {
		out[r.TrialDir] = r
	}
	return out
}

// storeIsTheDirectory checks that the store holds exactly the run's files,
// each as it is on disk.
func (c *crashRun) storeIsTheDirectory(t *testing.T) {
	t.Helper()
	storeHoldsTheRun(t, c.store, c.e.runID, c.e.runDir())
}

// noTempFiles checks that the directory store at root holds no temporary
// file: what the runners killed mid-upload left, the uploads after them
// removed.
func noTempFiles(t *testing.T, root string) {
	t.Helper()
	var left []string
	require.NoError(t, filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasPrefix(d.Name(), ".tmp-") {
			left = append(left, p)
		}
		return err
	}))
	assert.Empty(t, left, "temporary files left in the directory store")
}

var (
	phaseSmokeGate = crashPhase{name: "smoke gate", kill: &killPoint{Step: bench.StepSmokeGate, Nth: 1},
		landed: func(t *testing.T, c *crashRun, _ reported, after []reported) {
			assert.NoFileExists(t, filepath.Join(c.e.runDir(), "run.json"), "killed during the smoke gate")
			assert.Empty(t, after, "the gate was still running")
		}}
	phaseFreezing = crashPhase{name: "before run.json is frozen", kill: &killPoint{Step: bench.StepFreezing, Nth: 1},
		landed: func(t *testing.T, c *crashRun, _ reported, _ []reported) {
			assert.NoFileExists(t, filepath.Join(c.e.runDir(), "run.json"))
		}}
	phaseFrozen = crashPhase{name: "after run.json is frozen", kill: &killPoint{Step: bench.StepFrozen, Nth: 1},
		landed: func(t *testing.T, c *crashRun, _ reported, _ []reported) {
			assert.FileExists(t, filepath.Join(c.e.runDir(), "run.json"))
			assert.Empty(t, c.rowsByDir(t), "no trial ran")
		}}
	phaseAdoption = crashPhase{name: "mid-trial, adoption", kill: &killPoint{Step: bench.StepAgent, Nth: 1, Stage: "adoption"},
		landed: midTrial}
	phaseWarmUp = crashPhase{name: "agent warm-up", kill: &killPoint{Step: bench.StepWarmUp, Nth: 1},
		landed: func(t *testing.T, c *crashRun, _ reported, after []reported) {
			for _, r := range after {
				assert.NotContains(t, []bench.StepName{bench.StepWarmedUp, bench.StepAgent}, r.Step, "killed during the warm-up, not after it: %v", after)
			}
		}}
	phaseTrialEnd = crashPhase{name: "between a trial's end and its row", kill: &killPoint{Step: bench.StepTrialEnd, Nth: 1},
		landed: func(t *testing.T, c *crashRun, hit reported, _ []reported) {
			noRowOf(t, c, hit, nil)
			assert.DirExists(t, filepath.Join(c.e.runDir(), hit.Trial), "the trial ran and kept its directory")
		}}
	phaseRow = crashPhase{name: "right after a row", kill: &killPoint{Step: bench.StepRow, Nth: 1},
		landed: func(t *testing.T, c *crashRun, hit reported, _ []reported) {
			_, ok := c.rowsByDir(t)[hit.Trial]
			assert.True(t, ok, "%s: its row is on disk", hit.Trial)
		}}
	phaseUploadS3 = crashPhase{name: "upload to S3, its bytes being read", kill: &killPoint{Step: bench.StepUpload, Nth: 1, FileSuffix: "rows.jsonl"},
		landed: func(t *testing.T, c *crashRun, hit reported, _ []reported) {
			assert.False(t, sameBytes(t, c.store, hit.File, filepath.Join(c.e.runDir(), "rows.jsonl")), "%s is not uploaded yet", hit.File)
			c.storedRowsWhole(t)
		}}
	phaseUploadHeld = crashPhase{name: "upload to S3, in flight", holdS3: "rows.jsonl",
		landed: func(t *testing.T, c *crashRun, hit reported, _ []reported) {
			assert.False(t, sameBytes(t, c.store, c.e.runID+"/rows.jsonl", filepath.Join(c.e.runDir(), "rows.jsonl")),
				"the upload of %s in flight did not complete", hit.File)
			c.storedRowsWhole(t)
		}}
	phaseUploadLocal = crashPhase{name: "upload to a directory store", kill: &killPoint{Step: bench.StepUpload, Nth: 1, FileSuffix: "rows.jsonl"},
		landed: func(t *testing.T, c *crashRun, hit reported, after []reported) {
			phaseUploadS3.landed(t, c, hit, after)
			tmp, err := filepath.Glob(filepath.Join(c.bench.Store, filepath.Dir(filepath.FromSlash(hit.File)), ".tmp-*"))
			require.NoError(t, err)
			assert.NotEmpty(t, tmp, "killed while the store took %s: its temporary file is there", hit.File)
		}}
	phaseReport = crashPhase{name: "while the report is written", kill: &killPoint{Step: bench.StepReportFile, Nth: 1},
		landed: func(t *testing.T, c *crashRun, hit reported, _ []reported) {
			assert.FileExists(t, hit.File, "one report file is written")
			assert.Nil(t, storeBytes(t, c.store, c.e.runID+"/report.json"), "no report is published before it is whole")
		}}
)

// phaseAgent kills mid-trial in arm, its agent running.
func phaseAgent(arm string) crashPhase {
	return crashPhase{name: "mid-trial, " + arm, kill: &killPoint{Step: bench.StepAgent, Nth: 1, Arm: arm, Stage: "pair"}, landed: midTrial}
}

// midTrial checks that the kill hit a trial in flight: it has no row, and
// its sandbox, which the next runner must remove, is left.
func midTrial(t *testing.T, c *crashRun, hit reported, _ []reported) {
	t.Helper()
	noRowOf(t, c, hit, nil)
	assert.True(t, slices.ContainsFunc(c.e.leftDirs(t), func(d string) bool { return strings.HasPrefix(d, "pairbench-sandbox-") }),
		"%s was killed with its agent running: its sandbox is left: %v", hit.Trial, c.e.leftDirs(t))
}

// reportIsTheRows checks that the run's report is whole: the report that
// the run's plan and every row it holds give, written afresh elsewhere.
func reportIsTheRows(t *testing.T, dir string) {
	t.Helper()
	out := rundir.RunDir{Path: t.TempDir()}
	_, err := bench.WriteReport(rundir.RunDir{Path: dir}, out, "")
	require.NoError(t, err)
	for _, name := range []string{rundir.ReportJSON, rundir.ReportMarkdown} {
		want, err := os.ReadFile(out.File(name))
		require.NoError(t, err)
		got, err := os.ReadFile(filepath.Join(dir, name))
		require.NoError(t, err)
		assert.Equal(t, string(want), string(got), "%s is the report of every row of the run", name)
	}
}

// noRowOf checks that the trial the kill hit has no row.
func noRowOf(t *testing.T, c *crashRun, hit reported, _ []reported) {
	t.Helper()
	_, ok := c.rowsByDir(t)[hit.Trial]
	assert.False(t, ok, "%s was killed before its row", hit.Trial)
}

// storedRowsWhole checks that the stored rows are whole rows the directory
// holds too.
func (c *crashRun) storedRowsWhole(t *testing.T) {
	t.Helper()
	b := storeBytes(t, c.store, c.e.runID+"/rows.jsonl")
	rows, partial, err := pairbench.ReadRows(bytes.NewReader(b))
	require.NoError(t, err)
	assert.Zero(t, partial, "the stored rows end with a whole row")
	local := c.rowsByDir(t)
	for _, r := range rows {
		_, ok := local[r.TrialDir]
		assert.True(t, ok, "stored row %s is the directory's", r.TrialDir)
	}
}

// TestSIGTERMShutsDownCleanly sends SIGTERM while trials run: the runner
// exits 143 having stopped its agents and browsers and removed their
// directories itself, and a resume finishes the run.
func TestSIGTERMShutsDownCleanly(t *testing.T) {
	tools := clitest.RealStack(t)
	bin := clitest.Build(t)
	clitest.BecomeSubreaper(t)
	ctx := deadlineContext(t)

	e := newBenchEnv(t, bin, tools, "term", "--intent", "weather-high-oslo", "--pairs", "2", "--slots", "2")
	cmd, log := e.start(t, ctx)
	// Wait until trials are under way: a browser's sandbox exists (its
	// home holds the browser's DevTools socket).
	awaitWhileRunning(t, ctx, cmd, log, func() bool {
		for _, d := range e.leftDirs(t) {
			if _, err := os.Stat(filepath.Join(e.temp, d, "home", "devtools.sock")); err == nil {
				_, err := os.Stat(filepath.Join(e.runDir(), "run.json"))
				return err == nil
			}
		}
		return false
	}, "a trial starts")
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	code, sig := clitest.ExitStatus(cmd.Wait())
	assert.Equal(t, clitest.ExitSIGTERM, code, "exit status (signal %v): %s", sig, tail(log))
	assert.Contains(t, tail(log), "stopped by terminated")
	// The runner cleaned up after itself: nothing for a successor to do.
	assert.Empty(t, clitest.LiveOrphans(), "processes outlived a runner that shut down")
	assert.Empty(t, e.leftDirs(t), "directories left by a runner that shut down")

	cmd, log = e.start(t, ctx)
	code, sig = clitest.ExitStatus(cmd.Wait())
	require.Zero(t, code, "resume (signal %v): %s", sig, tail(log))
	clitest.CheckCompleteRun(t, e.runDir())
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
	clitest.BecomeSubreaper(t)
	marker := "7321.5" // a sleep length nothing else uses
	out, err := exec.Command("/bin/sh", "-c", "sleep "+marker+" >/dev/null 2>&1 & echo $!").Output()
	require.NoError(t, err)
	pid := strings.TrimSpace(string(out))
	t.Cleanup(func() { exec.Command("kill", "-9", pid).Run() })

	left := clitest.LiveOrphans()
	require.Len(t, left, 1)
	assert.Equal(t, pid+" sleep "+marker+" ", left[0])
}
