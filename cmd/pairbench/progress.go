package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/bench"
	"github.com/pairbench/pairbench/runner"
)

// progressState is what the progress display shows.
type progressState struct {
	runner.Progress
	// Slots holds the trial each slot runs; nil when idle.
	Slots []*slotTrial
}

// slotTrial is a trial running in a slot.
type slotTrial struct {
	Spec    runner.TrialSpec
	Started time.Time
}

// eta estimates the time left from this runner's pace so far; ok is false
// until a trial has been recorded.
func (s progressState) eta(now time.Time) (time.Duration, bool) {
	if s.Trials == 0 {
		return 0, false
	}
	left := 2*(s.Pairs-s.Done) - s.Half
	perTrial := now.Sub(s.Started) / time.Duration(s.Trials)
	return time.Duration(max(left, 0)) * perTrial, true
}

// renderProgress returns the display for s at now: one line per slot and a
// bar with pairs done, aborts, spend and ETA, each line at most width
// runes (0: no limit).
func renderProgress(s progressState, now time.Time, width int) []string {
	var lines []string
	for i, t := range s.Slots {
		line := fmt.Sprintf("slot %d  idle", i+1)
		if t != nil {
			line = fmt.Sprintf("slot %d  %s pair %d %s", i+1, t.Spec.Job.Intent, t.Spec.Job.Pair, t.Spec.Arm)
			if t.Spec.Job.Stage == pairbench.StageAdoption {
				line = fmt.Sprintf("slot %d  %s adoption %d", i+1, t.Spec.Job.Intent, t.Spec.Job.Pair)
			}
			if t.Spec.Job.Attempt > 1 {
				line += fmt.Sprintf(" (attempt %d)", t.Spec.Job.Attempt)
			}
			line += "  " + shortDuration(now.Sub(t.Started))
		}
		lines = append(lines, line)
	}
	const barWidth = 24
	filled := 0
	if s.Pairs > 0 {
		filled = barWidth * s.Done / s.Pairs
	}
	eta := "ETA ?"
	if d, ok := s.eta(now); ok {
		eta = "ETA " + shortDuration(d)
	}
	lines = append(lines, fmt.Sprintf("[%s%s] %d/%d pairs  %d aborted  $%.3f  %s",
		strings.Repeat("#", filled), strings.Repeat(".", barWidth-filled), s.Done, s.Pairs, s.Aborts, s.Spend, eta))
	if width > 0 {
		for i, l := range lines {
			if r := []rune(l); len(r) > width {
				lines[i] = string(r[:width])
			}
		}
	}
	return lines
}

// shortDuration prints d to the second: 45s, 3m05s, 1h02m.
func shortDuration(d time.Duration) string {
	d = d.Round(time.Second)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
}

// progress shows a bench as it goes, from its hooks. On a terminal it
// keeps a live display (see liveView); otherwise it logs a progress record
// after every trial.
type progress struct {
	mu    sync.Mutex
	state progressState
	view  *liveView // nil when not on a terminal
	log   *slog.Logger
	now   func() time.Time
}

// newProgress starts showing a bench of slots slots. view may be nil.
func newProgress(view *liveView, log *slog.Logger, now func() time.Time, slots int) *progress {
	return &progress{state: progressState{Slots: make([]*slotTrial, slots)}, view: view, log: log, now: now}
}

// hooks returns the bench hooks that feed the display; problems are
// logged as warnings.
func (p *progress) hooks() bench.Hooks {
	return bench.Hooks{Start: p.started, Row: p.recorded, Progress: p.progressed,
		Problem: func(pr runner.Problem) { p.log.Warn(pr.Msg, pr.LogArgs()...) }}
}

// started puts a trial in the first idle slot.
func (p *progress) started(spec runner.TrialSpec) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, t := range p.state.Slots {
		if t == nil {
			p.state.Slots[i] = &slotTrial{Spec: spec, Started: p.now()}
			break
		}
	}
	p.drawLocked()
}

// progressed takes the run's counts.
func (p *progress) progressed(pr runner.Progress) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.state.Progress = pr
	p.drawLocked()
}

// recorded frees a trial's slot and, without a display, logs the progress.
func (p *progress) recorded(row pairbench.Row) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, t := range p.state.Slots {
		if t != nil && t.Spec.Dir == row.TrialDir {
			p.state.Slots[i] = nil
		}
	}
	if p.view == nil {
		s := p.state
		eta := "?"
		if d, ok := s.eta(p.now()); ok {
			eta = shortDuration(d)
		}
		p.log.Info("progress", "pairs_done", s.Done, "pairs", s.Pairs, "aborted", s.Aborts,
			"spend_usd", fmt.Sprintf("%.4f", s.Spend), "eta", eta)
	}
	p.drawLocked()
}

// drawLocked draws the display, once the run's trials have started.
func (p *progress) drawLocked() {
	if p.view != nil && !p.state.Started.IsZero() {
		p.view.set(renderProgress(p.state, p.now(), p.view.width()))
	}
}

// animate redraws the display every half second (so slot clocks and the
// ETA move) until the returned stop is called, which leaves the last
// display on screen. Without a display it does nothing.
func (p *progress) animate(ctx context.Context) (stop func()) {
	if p.view == nil {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(500 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				p.mu.Lock()
				p.drawLocked()
				p.mu.Unlock()
			}
		}
	}()
	return func() {
		cancel()
		<-done
		p.view.stop()
	}
}

// liveView keeps a block of status lines at the bottom of a terminal. Text
// written to it (log records) scrolls above the block.
type liveView struct {
	mu    sync.Mutex
	w     io.Writer
	fd    int
	lines []string // the block as drawn
	done  bool
}

// newLiveView returns a view on w when w is a terminal, else nil.
func newLiveView(w io.Writer) *liveView {
	f, ok := w.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return nil
	}
	return &liveView{w: w, fd: int(f.Fd())}
}

func (v *liveView) width() int {
	w, _, err := term.GetSize(v.fd)
	if err != nil || w <= 1 {
		return 0
	}
	return w - 1 // never the last column, which wraps on some terminals
}

// clear erases the drawn block; the cursor ends where it began.
func (v *liveView) clear() {
	if n := len(v.lines); n > 0 {
		fmt.Fprint(v.w, "\r"+strings.Repeat("\x1b[1A\x1b[2K", n))
	}
}

func (v *liveView) draw() {
	if len(v.lines) > 0 {
		fmt.Fprint(v.w, strings.Join(v.lines, "\n")+"\n")
	}
}

// Write prints b above the block.
func (v *liveView) Write(b []byte) (int, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.clear()
	n, err := v.w.Write(b)
	v.draw()
	return n, err
}

// set replaces the block; after stop it does nothing.
func (v *liveView) set(lines []string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.done {
		return
	}
	v.clear()
	v.lines = lines
	v.draw()
}

// stop leaves the last block on screen as ordinary output.
func (v *liveView) stop() {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.done = true
	v.lines = nil
}

// liveOutput returns where log records go: through a live display when w
// is a terminal and records are text, else w itself (view is then nil).
func liveOutput(w io.Writer, format string) (out io.Writer, view *liveView) {
	if format != "text" {
		return w, nil
	}
	if view = newLiveView(w); view == nil {
		return w, nil
	}
	return view, view
}
