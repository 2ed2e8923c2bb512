package rundir

import (
	"fmt"

	"github.com/pairbench/pairbench"
)

// PlanRows keeps the rows that are trials of a plan and counts the others.
// It is the one judge of that: the report, merge and resume all read the
// rows through it, so that a row no runner of the plan could have written
// never counts in a verdict nor makes resume skip a pair.
//
// A row is left out when its run id is another run's, when its pair is one
// the plan does not have (pair 99 of a 12-pair intent), when it ran its pair
// in the other order than the plan's, or when it repeats a trial kept before
// it (same stage, intent, pair, arm and attempt: the first one counts).
// Rows of intents the plan does not have are kept: the report names them as
// unplanned, and merge refuses them.
//
// A report reads a million rows through it, so what it keeps of each
// planned pair holds no pointer (the collector never scans it) and takes a
// few bytes: planRowsIndex.
type PlanRows struct {
	runID string
	planRowsIndex
	// kept holds the trials kept that the index does not (another stage,
	// an intent the plan does not have, an attempt past 64).
	kept map[rowID]bool
	// left counts the rows left out, by fault.
	left map[RowFault]int
}

// RowFault is why a row is not a trial of its plan.
type RowFault int

const (
	// RowOfThePlan is no fault: the row is a trial of the plan.
	RowOfThePlan RowFault = iota
	// RowOfAnotherRun has another run's id.
	RowOfAnotherRun
	// RowOfNoPlannedPair is of a pair its intent's plan does not have.
	RowOfNoPlannedPair
	// RowInAnotherOrder ran its pair in another order than the plan's.
	RowInAnotherOrder
	// RowRepeated repeats a trial kept before it.
	RowRepeated
)

// rowFaults are the faults, in the order Tell tells them, and what the
// rows left out for each are.
var rowFaults = []struct {
	fault RowFault
	rows  string
}{
	{RowOfAnotherRun, "whose run_id is not %q"},
	{RowOfNoPlannedPair, "of pairs the plan does not have"},
	{RowInAnotherOrder, "that ran their pair in another order than the plan's"},
	{RowRepeated, "that repeat a trial recorded before them (same pair, arm and attempt)"},
}

// NewPlanRows returns the judge of rows of plan, which has seen no row yet.
func NewPlanRows(plan *Plan) *PlanRows {
	return &PlanRows{runID: plan.RunID, planRowsIndex: newPlanRowsIndex(plan), kept: map[rowID]bool{}, left: map[RowFault]int{}}
}

// Fault returns why r, the next row, is not a trial of the plan
// (RowOfThePlan when it is), without counting or keeping it.
func (p *PlanRows) Fault(r *pairbench.Row) RowFault {
	switch {
	case r.RunID != "" && r.RunID != p.runID:
		return RowOfAnotherRun
	case r.Stage == pairbench.StagePair:
		if in := p.intent(r.Intent); in != nil {
			pp := in.pair(r.Pair)
			if pp == nil {
				return RowOfNoPlannedPair
			}
			if r.Order != pp.order() {
				return RowInAnotherOrder
			}
			if bit, ok := attemptBit(r); ok {
				if pp.kept[armIndex(r.Arm)]&bit != 0 {
					return RowRepeated
				}
				return RowOfThePlan
			}
		}
	}
	if p.kept[idOf(*r)] {
		return RowRepeated
	}
	return RowOfThePlan
}

// Keep reports whether r, the next row in file order, is a trial of the
// plan; a row that is not is counted as left out.
func (p *PlanRows) Keep(r *pairbench.Row) bool {
	if f := p.Fault(r); f != RowOfThePlan {
		p.left[f]++
		return false
	}
	if r.Stage == pairbench.StagePair {
		if in := p.intent(r.Intent); in != nil {
			if bit, ok := attemptBit(r); ok {
				in.pair(r.Pair).kept[armIndex(r.Arm)] |= bit
				return true
			}
		}
	}
	p.kept[idOf(*r)] = true
	return true
}

// Skipped returns how many rows were left out.
func (p *PlanRows) Skipped() int {
	n := 0
	for _, c := range p.left {
		n += c
	}
	return n
}

// Warnings returns a warning per fault about the rows left out of file (a
// rows file, or the run directory), none when nothing was left out.
func (p *PlanRows) Warnings(file string) []Problem {
	var out []Problem
	for _, f := range rowFaults {
		if n := p.left[f.fault]; n > 0 {
			rows := f.rows
			if f.fault == RowOfAnotherRun {
				rows = fmt.Sprintf(rows, p.runID)
			}
			out = append(out, Problem{File: file, Msg: fmt.Sprintf("left out %d rows %s", n, rows)})
		}
	}
	return out
}
