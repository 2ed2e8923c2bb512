// Package progress shows a bench as it runs, fed by its hooks
// (bench.Hooks): one line per slot with the trial it runs and for how long,
// and a bar with the pairs done of those in force (in a run of looks, the
// look's under way), the aborted trials, the spend and an estimate of the
// time left; a run that stopped at a look says where and why. On a
// terminal the display stays at the bottom of the screen, log records
// scrolling above it (Terminal), drawn by its own goroutine (Animate): the
// hooks, which the engine calls one at a time from the slots (each slot
// waits on its call), only take the counts, so a terminal that blocks
// never stalls a trial. Elsewhere a progress record is
// logged after every trial.
package progress

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/bench"
	"github.com/pairbench/pairbench/rundir"
	"github.com/pairbench/pairbench/runner"
)

// State is what the display shows.
type State struct {
	rundir.Progress
	// Slots holds the trial each slot runs; nil when idle.
	Slots []*Slot
	// Timed trials ran, start to row, for TrialTime together: the pace
	// the estimate of the time left is drawn from.
	Timed     int
	TrialTime time.Duration
}

// Slot is a trial running in a slot.
type Slot struct {
	Spec    runner.TrialSpec
	Started time.Time
}

// ETA estimates the time left; ok is false until a trial has been timed.
// A trial takes the mean time of the trials timed so far: the trials
// running take what is left of it, each at least nothing, and the trials
// waiting take all of it, the slots working side by side. (Dividing the
// time since the start by the trials recorded, as a single slot would,
// counts the set-up and ignores the trials under way: after the first row
// of a two-slot run it reads more than twice the truth.)
func (s State) ETA(now time.Time) (left time.Duration, ok bool) {
	if s.Timed == 0 || len(s.Slots) == 0 {
		return 0, false
	}
	mean := s.TrialTime / time.Duration(s.Timed)
	waiting := max(2*(s.Pairs-s.Done)-s.Half, 0)
	var work time.Duration
	for _, t := range s.Slots {
		if t != nil && waiting > 0 {
			waiting--
			work += max(mean-now.Sub(t.Started), 0)
		}
	}
	work += time.Duration(waiting) * mean
	return work / time.Duration(len(s.Slots)), true
}

// money shows an amount spent: in dollars, or as notional units when the
// costs are a scripted model's, so nobody reads them as money spent.
func money(amount float64, notional bool, digits int) string {
	if notional {
		return fmt.Sprintf("%.*f notional", digits, amount)
	}
	return fmt.Sprintf("$%.*f", digits, amount)
}

// Render returns the display of s at now: one line per slot and a bar
// with pairs done, aborts, spend and ETA, each line at most width runes
// (0: no limit).
func Render(s State, now time.Time, width int) []string {
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
	if d, ok := s.ETA(now); ok {
		eta = "ETA " + shortDuration(d)
	}
	look := rundir.LookUnderWay(s.Look, s.Looks, s.Planned)
	if look != "" {
		look = " (" + look + ")"
	}
	lines = append(lines, fmt.Sprintf("[%s%s] %d/%d pairs%s  %d aborted  %s  %s",
		strings.Repeat("#", filled), strings.Repeat(".", barWidth-filled), s.Done, s.Pairs, look, s.Aborts, money(s.Spend, s.Notional, 3), eta))
	if line := stopLine(s.Progress); line != "" {
		lines = append(lines, line)
	}
	if width > 0 {
		for i, l := range lines {
			if r := []rune(l); len(r) > width {
				lines[i] = string(r[:width])
			}
		}
	}
	return lines
}

// stopLine says where and why a run of looks stopped before its last
// look ("" while it goes on, or when it went through them all): its pairs
// end there, short of those planned.
func stopLine(p rundir.Progress) string {
	st := p.Stop
	if !st.Early() {
		return ""
	}
	return fmt.Sprintf("stopped at look %d of %d (%d pairs per intent) for %s: %s; the pairs planned past it do not run",
		st.Look, p.Looks, st.Pairs, st.Kind, st.Reason)
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

// Display shows a bench as it goes, from its hooks. On a Terminal it keeps
// the live display there; without one it logs a progress record after
// every trial. Its methods are safe to call from the bench's goroutines.
type Display struct {
	mu    sync.Mutex
	state State
	term  *Terminal // nil when not on a terminal
	log   *slog.Logger
	now   func() time.Time
}

// New returns the display of a bench of slots slots, drawn on term (nil:
// logged to log), its clocks read from now.
func New(term *Terminal, log *slog.Logger, now func() time.Time, slots int) *Display {
	return &Display{state: State{Slots: make([]*Slot, slots)}, term: term, log: log, now: now}
}

// Hooks returns the bench hooks that feed the display; problems are
// logged as warnings.
func (d *Display) Hooks() bench.Hooks {
	return bench.Hooks{Start: d.started, Row: d.recorded, Progress: d.progressed,
		Problem: func(pr rundir.Problem) { d.log.Warn(pr.Msg, pr.LogArgs()...) }}
}

// started puts a trial in the first idle slot. It writes nothing: the
// engine's slots wait on it (Animate draws).
func (d *Display) started(spec runner.TrialSpec) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for i, t := range d.state.Slots {
		if t == nil {
			d.state.Slots[i] = &Slot{Spec: spec, Started: d.now()}
			break
		}
	}
}

// progressed takes the run's counts. It writes nothing: the engine's
// slots wait on it (Animate draws); a stop at a look is logged by the
// engine.
func (d *Display) progressed(pr rundir.Progress) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.state.Progress = pr
}

// recorded frees a trial's slot and, without a terminal, logs the
// progress (a log record, which goes around the terminal's block).
func (d *Display) recorded(row pairbench.Row) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for i, t := range d.state.Slots {
		if t != nil && t.Spec.Dir == row.TrialDir {
			d.state.Slots[i] = nil
			d.state.Timed++
			d.state.TrialTime += d.now().Sub(t.Started)
		}
	}
	if d.term == nil {
		s := d.state
		eta := "?"
		if left, ok := s.ETA(d.now()); ok {
			eta = shortDuration(left)
		}
		spend := []any{"spend_usd", fmt.Sprintf("%.4f", s.Spend)}
		if s.Notional {
			spend = []any{"spend_notional", fmt.Sprintf("%.4f", s.Spend)}
		}
		attrs := []any{"pairs_done", s.Done, "pairs", s.Pairs}
		if s.Looks > 1 {
			attrs = append(attrs, "look", s.Look, "looks", s.Looks, "pairs_planned", s.Planned)
		}
		attrs = append(append(append(attrs, "aborted", s.Aborts), spend...), "eta", eta)
		d.log.Info("progress", attrs...)
	}
}

// drawLocked draws the display, once the run's trials have started.
func (d *Display) drawLocked() {
	if d.term != nil && !d.state.Started.IsZero() {
		d.term.Set(Render(d.state, d.now(), d.term.Width()))
	}
}

// Animate draws the display every half second (so slot clocks and the
// ETA move, and what the hooks took shows) until the returned stop is
// called, which draws it a last time and leaves it on screen as ordinary
// output. Without a terminal it does nothing.
func (d *Display) Animate(ctx context.Context) (stop func()) {
	if d.term == nil {
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
				d.mu.Lock()
				d.drawLocked()
				d.mu.Unlock()
			}
		}
	}()
	return func() {
		cancel()
		<-done
		d.mu.Lock()
		d.drawLocked()
		d.mu.Unlock()
		d.term.Stop()
	}
}
