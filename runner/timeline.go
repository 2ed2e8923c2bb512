package runner

import (
	"time"

	"github.com/pairbench/pairbench/rundir"
)

// timeline records a trial's steps as they happen.
type timeline struct {
	start time.Time
	t     rundir.Timeline
}

func newTimeline(start time.Time) *timeline {
	return &timeline{start: start, t: rundir.Timeline{StartedAt: start.UTC()}}
}

func (tl *timeline) ms(at time.Time) int64 { return at.Sub(tl.start).Milliseconds() }

// mark records step at at.
func (tl *timeline) mark(step string, at time.Time) {
	tl.t.Marks = append(tl.t.Marks, rundir.Mark{Step: step, AtMS: tl.ms(at)})
}

// setup marks the steps of the browser that passed setup, which ended at
// done: its timing says how long each step took.
func (tl *timeline) setup(s *Setup, arm string, done time.Time) {
	at := done.Add(-s.Timing.Total())
	tl.mark(rundir.StepBrowserOpening, at)
	at = at.Add(s.Timing.Open)
	tl.mark(rundir.StepBrowserOpen, at)
	if arm == "treatment" {
		at = at.Add(s.Timing.Register)
		tl.mark(rundir.StepToolsRegistered, at)
	}
	at = at.Add(s.Timing.Load)
	if !s.Load.LoadedAt.IsZero() {
		at = s.Load.LoadedAt
	}
	tl.mark(rundir.StepPageLoaded, at)
	tl.mark(rundir.StepSetupDone, done)
}

func (tl *timeline) times(ts []time.Time) []int64 {
	out := make([]int64, len(ts))
	for i, at := range ts {
		out[i] = tl.ms(at)
	}
	return out
}
