package progress

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/report"
	"github.com/pairbench/pairbench/rundir"
	"github.com/pairbench/pairbench/runner"
)

func trialSpec(intent string, pair int, arm pairbench.Arm, attempt int) runner.TrialSpec {
	job := rundir.Job{Intent: intent, Stage: pairbench.StagePair, Pair: pair, Attempt: attempt}
	return runner.TrialSpec{Job: job, Arm: arm, Dir: rundir.TrialDir(job, arm)}
}

func TestRenderProgress(t *testing.T) {
	start := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	now := start.Add(2 * time.Minute)
	s := State{
		Progress: rundir.Progress{Started: start, Pairs: 12, Done: 6, Half: 1, Trials: 8, Aborts: 1, Spend: 0.0642},
		Slots: []*Slot{
			{Spec: trialSpec("books-count-by-author", 3, pairbench.Treatment, 2), Started: now.Add(-20 * time.Second)},
			nil,
		},
		Timed: 8, TrialTime: 8 * 30 * time.Second,
	}
	// 2×6−1 = 11 trials are left at 30 s each: the one running has 10 s to
	// go, the 10 waiting 300 s, over 2 slots.
	assert.Equal(t, []string{
		"slot 1  books-count-by-author pair 3 treatment (attempt 2)  20s",
		"slot 2  idle",
		"[############............] 6/12 pairs  1 aborted  $0.064  ETA 2m35s",
	}, Render(s, now, 0))
	s.Notional = true
	assert.Contains(t, Render(s, now, 0)[2], " 0.064 notional ", "a scripted model's prices are not money")
	s.Notional = false

	lines := Render(s, now, 20)
	for _, l := range lines {
		assert.LessOrEqual(t, len([]rune(l)), 20, l)
	}
	assert.Equal(t, "slot 1  books-count-", lines[0])

	s.Timed = 0
	assert.Contains(t, Render(s, now, 0)[2], "ETA ?", "no pace before the first trial")
	s.Done, s.Pairs = 0, 0
	assert.Contains(t, Render(s, now, 0)[2], "[........................] 0/0 pairs")
}

// TestFirstETAIsThePace checks the estimate after the first row of a
// two-slot run, where the old one (the time since the start over the
// trials recorded) read 2.4 times the truth: 40 trials of 60 s each, a
// minute of set-up first, the second slot's trial under way for 50 s.
func TestFirstETAIsThePace(t *testing.T) {
	start := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	now := start.Add(2 * time.Minute)
	s := State{
		Progress: rundir.Progress{Started: start, Pairs: 20, Half: 1, Trials: 1, Running: 1},
		Slots:    []*Slot{nil, {Started: now.Add(-50 * time.Second)}},
		Timed:    1, TrialTime: time.Minute,
	}
	left, ok := s.ETA(now)
	require.True(t, ok)
	// The truth: 10 s for the running trial, then 38 trials two at a time.
	truth := 10*time.Second + 19*time.Minute
	assert.InDelta(t, truth.Seconds(), left.Seconds(), 5, "ETA %v, truth about %v", left, truth)
}

// TestProgressFollowsTheHooks feeds the display the hooks of a bench: it
// puts each trial in the first idle slot, frees it with its row, and
// without a terminal logs the run's counts after every row.
func TestProgressFollowsTheHooks(t *testing.T) {
	clock := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	now := func() time.Time { return clock }
	var logs bytes.Buffer
	p := New(nil, slog.New(slog.NewTextHandler(&logs, nil)), now, 2)
	h := p.Hooks()

	a := trialSpec("weather-high-oslo", 1, pairbench.Control, 1)
	b := trialSpec("weather-high-oslo", 2, pairbench.Treatment, 1)
	h.Start(a)
	h.Start(b)
	require.NotNil(t, p.state.Slots[0])
	assert.Equal(t, a.Dir, p.state.Slots[0].Spec.Dir)
	assert.Equal(t, b.Dir, p.state.Slots[1].Spec.Dir)

	clock = clock.Add(10 * time.Second)
	h.Progress(rundir.Progress{Started: clock.Add(-10 * time.Second), Pairs: 3, Done: 3, Trials: 1, Aborts: 1, Spend: 0.05})
	h.Row(pairbench.Row{Intent: a.Job.Intent, Pair: a.Job.Pair, Arm: a.Arm, TrialDir: a.Dir})
	assert.Nil(t, p.state.Slots[0], "the slot is free again")
	b2 := trialSpec("weather-high-oslo", 2, pairbench.Treatment, 2)
	h.Start(b2)
	assert.Equal(t, b2.Dir, p.state.Slots[0].Spec.Dir, "the first idle slot")

	assert.Equal(t, 1, strings.Count(logs.String(), "msg=progress"), "without a terminal, a progress record per row")
	assert.Contains(t, logs.String(), "pairs_done=3 pairs=3 aborted=1 spend_usd=0.0500 eta=0s")
	h.Progress(rundir.Progress{Pairs: 3, Done: 3, Trials: 2, Spend: 0.07, Notional: true})
	h.Row(pairbench.Row{Intent: b2.Job.Intent, Pair: b2.Job.Pair, Arm: b2.Arm, TrialDir: b2.Dir})
	assert.Contains(t, logs.String(), "spend_notional=0.0700", "a scripted model's spend is not logged as dollars")

	h.Problem(rundir.Problem{File: "rows.jsonl", Line: 3, Msg: "skipped a partial last line"})
	assert.Contains(t, logs.String(), `level=WARN msg="skipped a partial last line" file=rows.jsonl line=3`)
}

func TestTerminalKeepsTheBlockBelowLogs(t *testing.T) {
	var out bytes.Buffer
	v := &Terminal{w: &out}
	v.Set([]string{"slot 1  idle", "[...] 0/1 pairs"})
	v.Write([]byte("time=... msg=trial\n"))
	v.Set([]string{"slot 1  idle", "[###] 1/1 pairs"})
	v.Stop()
	v.Set([]string{"after stop"})
	v.Write([]byte("report.md\n"))

	const up = "\r\x1b[1A\x1b[2K\x1b[1A\x1b[2K" // erase two lines
	assert.Equal(t,
		"slot 1  idle\n[...] 0/1 pairs\n"+
			up+"time=... msg=trial\n"+"slot 1  idle\n[...] 0/1 pairs\n"+
			up+"slot 1  idle\n[###] 1/1 pairs\n"+
			"report.md\n",
		out.String())

	w, view := Output(&out, "text")
	assert.Nil(t, view, "a buffer is not a terminal")
	assert.Same(t, &out, w)
}

// TestRenderLooks: in a run of looks the bar counts the pairs in force,
// those of the look under way, and names the look and the pairs planned;
// a run that stopped at a look says where and why, not a bar short of the
// total.
func TestRenderLooks(t *testing.T) {
	start := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	s := State{Progress: rundir.Progress{Started: start, Pairs: 8, Done: 5, Planned: 24, Look: 1, Looks: 3}, Slots: []*Slot{nil}}
	assert.Equal(t, []string{
		"slot 1  idle",
		"[###############.........] 5/8 pairs (look 1 of 3, 24 planned)  0 aborted  $0.000  ETA ?",
	}, Render(s, start, 0))

	s.Done = 8
	s.Stop = &rundir.LookStop{Look: 1, Pairs: 4, Kind: report.StopFutility, Reason: "both pooled tests' p above the futility bound 0.2"}
	assert.Equal(t, []string{
		"slot 1  idle",
		"[########################] 8/8 pairs (look 1 of 3, 24 planned)  0 aborted  $0.000  ETA ?",
		"stopped at look 1 of 3 (4 pairs per intent) for futility: both pooled tests' p above the futility bound 0.2; the pairs planned past it do not run",
	}, Render(s, start, 0))

	s.Look, s.Stop = 3, &rundir.LookStop{Look: 3, Pairs: 12, Kind: report.StopComplete}
	assert.Len(t, Render(s, start, 0), 2, "a run that went through its looks did not stop short")
}

// recordingWriter counts the writes to a terminal.
type recordingWriter struct {
	mu     sync.Mutex
	writes int
	out    bytes.Buffer
}

func (w *recordingWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.writes++
	return w.out.Write(b)
}

// TestHooksNeverWriteToTheTerminal: the engine calls the Start and
// Progress hooks one at a time, each slot waiting on its call; on a
// terminal they only take the counts, and the display is drawn by
// Animate's goroutine, so a terminal that blocks (a paused or slow one)
// never stalls a trial. Stopping the animation draws the last state.
func TestHooksNeverWriteToTheTerminal(t *testing.T) {
	clock := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	w := &recordingWriter{}
	d := New(&Terminal{w: w}, slog.New(slog.DiscardHandler), func() time.Time { return clock }, 1)
	h := d.Hooks()
	spec := trialSpec("weather-high-oslo", 0, pairbench.Control, 1)
	h.Progress(rundir.Progress{Started: clock, Pairs: 4, Planned: 12, Look: 1, Looks: 3})
	h.Start(spec)
	h.Progress(rundir.Progress{Started: clock, Pairs: 4, Planned: 12, Look: 1, Looks: 3, Running: 1})
	h.Row(pairbench.Row{Intent: spec.Job.Intent, Pair: 0, Arm: spec.Arm, TrialDir: spec.Dir})
	h.Progress(rundir.Progress{Started: clock, Pairs: 4, Done: 4, Planned: 12, Look: 1, Looks: 3,
		Stop: &rundir.LookStop{Look: 1, Pairs: 4, Kind: report.StopFutility, Reason: "no effect"}})
	w.mu.Lock()
	assert.Zero(t, w.writes, "the hooks wrote to the terminal")
	w.mu.Unlock()

	stop := d.Animate(t.Context())
	stop()
	w.mu.Lock()
	defer w.mu.Unlock()
	assert.Contains(t, w.out.String(), "4/4 pairs (look 1 of 3, 12 planned)")
	assert.Contains(t, w.out.String(), "stopped at look 1 of 3 (4 pairs per intent) for futility: no effect")
}
