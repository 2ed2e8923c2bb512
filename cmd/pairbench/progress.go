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
	"github.com/pairbench/pairbench/runner"
)

// progressState is what the progress display knows about a run.
type progressState struct {
	Start time.Time
	// Slots holds the trial each slot runs; nil when idle.
	Slots []*slotTrial
	// Pairs is how many pairs this runner has to finish, Done how many of
	// them are (both arms scored in one attempt), counting earlier runners'.
	Pairs, Done int
	// Half is how many pairs have one arm scored in their current attempt.
	Half int
	// Trials and Aborts count this runner's recorded trials; Spend is
	// their cost in USD.
	Trials, Aborts int
	Spend          float64
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
	perTrial := now.Sub(s.Start) / time.Duration(s.Trials)
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

// progress follows a run through Execution's hooks. On a terminal it keeps
// a live display (see liveView); otherwise it logs a progress record after
// every trial.
type progress struct {
	mu    sync.Mutex
	state progressState
	// pairs tracks the scored arms of each unfinished pair's latest attempt.
	pairs map[pairbench.Key]pairScore
	view  *liveView // nil when not on a terminal
	log   *slog.Logger
	now   func() time.Time
}

type pairScore struct {
	attempt int
	scored  int
}

// newProgress starts following a run of slots slots with pairs pairs to
// finish, done of them already. view may be nil.
func newProgress(view *liveView, log *slog.Logger, now func() time.Time, slots, pairs, done int) *progress {
	return &progress{
		state: progressState{Start: now(), Slots: make([]*slotTrial, slots), Pairs: pairs, Done: done},
		pairs: map[pairbench.Key]pairScore{}, view: view, log: log, now: now,
	}
}

// started puts a trial in the first idle slot (Execution.OnStart).
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

// recorded counts a trial's row and frees its slot (Execution.OnRow).
func (p *progress) recorded(row pairbench.Row) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, t := range p.state.Slots {
		if t != nil && t.Spec.Dir == row.TrialDir {
			p.state.Slots[i] = nil
		}
	}
	s := &p.state
	s.Trials++
	s.Spend += row.CostUSD
	if row.Outcome == pairbench.Aborted {
		s.Aborts++
	}
	if row.Stage == pairbench.StagePair {
		ps := p.pairs[row.Key()]
		if ps.attempt != row.Attempt {
			if ps.scored == 1 {
				s.Half--
			}
			ps = pairScore{attempt: row.Attempt}
		}
		if row.Outcome.Scored() {
			ps.scored++
			switch ps.scored {
			case 1:
				s.Half++
			case 2:
				s.Half--
				s.Done++
			}
		}
		p.pairs[row.Key()] = ps
	}
	if p.view == nil {
		eta := "?"
		if d, ok := s.eta(p.now()); ok {
			eta = shortDuration(d)
		}
		p.log.Info("progress", "pairs_done", s.Done, "pairs", s.Pairs, "aborted", s.Aborts,
			"spend_usd", fmt.Sprintf("%.4f", s.Spend), "eta", eta)
	}
	p.drawLocked()
}

func (p *progress) drawLocked() {
	if p.view != nil {
		p.view.set(renderProgress(p.state, p.now(), p.view.width()))
	}
}

// animate redraws the display every interval (so slot clocks and the ETA
// move) until ctx ends; it returns at once without a display.
func (p *progress) animate(ctx context.Context, interval time.Duration) {
	if p.view == nil {
		return
	}
	tick := time.NewTicker(interval)
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

// followRun hooks progress onto ex (OnStart, and OnRow after ex's own) and
// animates view, if any, until the returned stop is called, which leaves
// the last display on screen.
func followRun(ctx context.Context, ex *runner.Execution, view *liveView, log *slog.Logger) (stop func(), err error) {
	pairs, err := ex.Pairs()
	if err != nil {
		return nil, err
	}
	rows, err := ex.Dir.ReadRowsFile(ex.RowsFile(), nil)
	if err != nil {
		return nil, err
	}
	p := newProgress(view, log, time.Now, ex.Slots, len(pairs), len(pairs)-len(runner.Pending(pairs, rows)))
	ex.OnStart = p.started
	onRow := ex.OnRow
	ex.OnRow = func(r pairbench.Row) {
		if onRow != nil {
			onRow(r)
		}
		p.recorded(r)
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.animate(ctx, 500*time.Millisecond)
	}()
	p.mu.Lock()
	p.drawLocked()
	p.mu.Unlock()
	return func() {
		cancel()
		<-done
		if view != nil {
			view.stop()
		}
	}, nil
}
