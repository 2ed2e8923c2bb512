package rundir

import (
	"bytes"
	"encoding/json"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/report"
	"github.com/pairbench/pairbench/stats"
)

// LookStop records, in run.json, the look of a group-sequential design a
// run stopped at, and why (docs/statistics.md, Looks). Only the pairs of
// the looks up to it are in force (Plan.PairsInForce).
type LookStop struct {
	// Look is the look, from 1; Pairs the pairs per intent it saw.
	Look  int `json:"look"`
	Pairs int `json:"pairs"`
	// Kind is why the run stopped: efficacy (its verdict claims a
	// difference), futility, or complete (the last look).
	Kind report.StopKind `json:"kind"`
	// Verdict is the run's verdict at the look; Claimed says whether its
	// report claims any difference (the verdict or an intent's label).
	Verdict pairbench.Label `json:"verdict"`
	Claimed bool            `json:"claimed,omitempty"`
	// Reason says why in words (stats.Design.Decide).
	Reason string `json:"reason"`
}

// Early reports whether the run stopped before its last look (for
// efficacy or futility), so the pairs planned past the look never ran;
// false for a nil stop (the run goes on) and for a run that went through
// its looks (complete).
func (s *LookStop) Early() bool { return s != nil && s.Kind != report.StopComplete }

// Looker decides a run's looks from its rows as they stream past: each
// look not yet passed gets the report its own pairs give at its share of
// α, and the count of what is left of them. The decision depends on the
// plan and the rows alone, so the runner, a resume, and merge of a run's
// shards all find the same look.
type Looker struct {
	plan   *Plan
	design stats.Design
	looks  []look
	// stopped is the report of the look Decide stopped at.
	stopped *report.Report
}

// look is one look's pairs (numbered below upTo), their report and their
// count.
type look struct {
	k      int
	upTo   int
	report *report.Builder
	status *StatusCounter
}

// NewLooker returns a Looker of plan's looks after the ones passed. A
// plan of one look has one, at all its pairs and the plan's α.
func NewLooker(plan *Plan) *Looker {
	l := &Looker{plan: plan, design: stats.Design{Looks: []float64{1}}}
	cuts := []int{plan.PairsPerIntent()}
	if d := plan.Design(); d != nil {
		l.design, cuts = *d, plan.Looks
	}
	for k := plan.Passed; k < len(cuts); k++ {
		upTo := cuts[k]
		at := *plan
		at.Stop = nil
		at.Intents = make([]PlannedIntent, len(plan.Intents))
		for i, in := range plan.Intents {
			at.Intents[i] = in
			at.Intents[i].Pairs = in.Pairs[:min(len(in.Pairs), upTo)]
		}
		l.looks = append(l.looks, look{k: k, upTo: upTo, report: report.NewBuilder(plan.StatsPlanAt(k)), status: NewStatusCounter(&at)})
	}
	return l
}

// Unread is what no look's report reads of a row (report.Builder.Unread).
func (l *Looker) Unread() pairbench.RowFields {
	f := ^pairbench.RowFields(0)
	for _, lk := range l.looks {
		f &= lk.report.Unread()
	}
	return f
}

// Add counts one row of the run that is a trial of its plan (PlanRows):
// in every look that sees it.
func (l *Looker) Add(r *pairbench.Row) {
	for _, lk := range l.looks {
		if r.Stage != pairbench.StagePair || r.Pair < lk.upTo {
			lk.report.Add(r)
			lk.status.Add(r)
		}
	}
}

// Decide takes the looks in order, each once every one of its pairs is
// done or given up: the first whose report stops the run
// (stats.Design.Decide) is returned; nil while the next look's pairs are
// still to run. Call it once, after the rows.
func (l *Looker) Decide() *LookStop {
	for _, lk := range l.looks {
		if !lk.status.Status().Finished() {
			return nil
		}
		rep := lk.report.Report()
		kind, why := report.Decide(l.design, rep, lk.k)
		if kind != "" {
			l.stopped = rep
			return &LookStop{Look: lk.k + 1, Pairs: min(lk.upTo, l.plan.PairsPerIntent()), Kind: kind,
				Verdict: rep.Verdict, Claimed: rep.Claims(), Reason: why}
		}
	}
	return nil
}

// Finished reports whether every pair of look k (from 0) is done or given
// up: Decide has taken it, so a nil Decide means the run goes on past it.
func (l *Looker) Finished(k int) bool {
	for _, lk := range l.looks {
		if lk.k == k {
			return lk.status.Status().Finished()
		}
	}
	return k < l.plan.Passed
}

// Report is the report of the look Decide stopped the run at (the one
// the run is reported at), nil when it stopped at none.
func (l *Looker) Report() *report.Report { return l.stopped }

// DecideStop decides plan's looks from the rows of the run in d that are
// trials of it (ScanRows of the plan): the look it stops at, or nil while a look's
// pairs are still to run. plan's own Stop, if any, is not read. Rows
// left out are not told (the report tells them).
func (d RunDir) DecideStop(plan *Plan) (*LookStop, error) {
	open := *plan
	open.Stop = nil
	l := NewLooker(&open)
	if _, err := d.ScanRows(RowQuery{Plan: &open, Skip: l.Unread()}, l.Add); err != nil {
		return nil, err
	}
	return l.Decide(), nil
}

// oneRunStopped reports whether two run.json files are one plan, one of
// them with the look the run stopped at recorded (Plan.Stop) and the other
// without it yet (an upload that failed after the stop): ok, and the one
// to keep when it is remote's (nil when local's is).
func oneRunStopped(local, remote []byte) (keep []byte, ok bool) {
	var l, r Plan
	if json.Unmarshal(local, &l) != nil || json.Unmarshal(remote, &r) != nil || (l.Stop == nil) == (r.Stop == nil) {
		return nil, false
	}
	lStop, rStop := l.Stop, r.Stop
	l.Stop, r.Stop = nil, nil
	lb, err1 := json.Marshal(&l)
	rb, err2 := json.Marshal(&r)
	if err1 != nil || err2 != nil || !bytes.Equal(lb, rb) {
		return nil, false
	}
	if rStop != nil && lStop == nil {
		return remote, true
	}
	return nil, true
}
