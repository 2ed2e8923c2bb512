package rundir

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench"
)

// TestMergeRefusesARepeatedRow: a rows file that records one trial twice
// (same pair, arm and attempt) is no run's: merge names the repeat.
func TestMergeRefusesARepeatedRow(t *testing.T) {
	plan := execPlan(map[string]int{"a": 2}, map[string]string{"a": "d"})
	row := pairbench.Row{RunID: "r1", Intent: "a", Domain: "d", Stage: pairbench.StagePair, Pair: 1,
		Order: plan.Intents[0].Pairs[1].Order, Arm: pairbench.Control, Attempt: 1, Outcome: pairbench.Correct}
	again := row
	again.Outcome = pairbench.Wrong
	var rows []byte
	for _, r := range []pairbench.Row{row, again} {
		var err error
		rows, err = pairbench.AppendRow(rows, r)
		require.NoError(t, err)
	}
	_, err := checkRows(plan, map[string][]byte{RowsFile: rows})
	var se *ShardsError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, []string{"rows.jsonl row 2: a pair 1 control attempt 1 repeats an earlier row"}, se.Problems)
}

// TestPlanRowsKeepsOnlyTrialsOfThePlan: every kind of row that is not a
// trial of the plan is left out and counted once; the trials are kept, an
// unplanned intent's rows included (the report names them as unplanned).
func TestPlanRowsKeepsOnlyTrialsOfThePlan(t *testing.T) {
	plan := execPlan(map[string]int{"a": 2}, map[string]string{"a": "d"})
	trial := func(pair int, arm pairbench.Arm, attempt int) pairbench.Row {
		return pairbench.Row{RunID: "r1", Intent: "a", Domain: "d", Stage: pairbench.StagePair, Pair: pair,
			Order: plan.Intents[0].Pairs[pair%2].Order, Arm: arm, Attempt: attempt, Outcome: pairbench.Correct}
	}
	other := trial(0, pairbench.Treatment, 1)
	other.RunID = "r9"
	reversed := trial(1, pairbench.Control, 1)
	reversed.Order = plan.Intents[0].Pairs[0].Order
	unplanned := trial(0, pairbench.Control, 1)
	unplanned.Intent = "z"
	judge := NewPlanRows(plan)
	for _, c := range []struct {
		row  pairbench.Row
		keep bool
	}{
		{trial(0, pairbench.Control, 1), true},
		{trial(0, pairbench.Control, 1), false}, // a repeat
		{trial(0, pairbench.Control, 2), true},  // the next attempt
		{other, false},
		{trial(12, pairbench.Control, 1), false}, // beyond the plan
		{reversed, false},
		{trial(1, pairbench.Control, 1), true}, // the reversed row kept no place
		{unplanned, true},
	} {
		assert.Equal(t, c.keep, judge.Keep(&c.row), "%+v", c.row)
	}
	assert.Equal(t, 4, judge.Skipped())
	var told []string
	for _, p := range judge.Warnings("rows.jsonl") {
		told = append(told, p.String())
	}
	assert.Equal(t, []string{
		`rows.jsonl: left out 1 rows whose run_id is not "r1"`,
		"rows.jsonl: left out 1 rows of pairs the plan does not have",
		"rows.jsonl: left out 1 rows that ran their pair in another order than the plan's",
		"rows.jsonl: left out 1 rows that repeat a trial recorded before them (same pair, arm and attempt)",
	}, told)
}

// TestPlanRowsIndexesEveryPlan: the judge's index of planned pairs (a
// slice by pair number, or a map when a plan numbers its pairs sparsely;
// attempts as bits, past 63 in a map) judges alike whatever the plan's
// numbers and however many attempts a pair took.
func TestPlanRowsIndexesEveryPlan(t *testing.T) {
	for _, numbers := range [][]int{{0, 1, 2}, {1, 2, 3}, {7, 100000, 3}} {
		plan := execPlan(map[string]int{"a": len(numbers)}, map[string]string{"a": "d"})
		for k, n := range numbers {
			plan.Intents[0].Pairs[k].Pair = n
		}
		judge := NewPlanRows(plan)
		for k, n := range numbers {
			row := pairbench.Row{RunID: "r1", Intent: "a", Domain: "d", Stage: pairbench.StagePair, Pair: n,
				Order: plan.Intents[0].Pairs[k].Order, Arm: pairbench.Treatment, Attempt: 1, Outcome: pairbench.Correct}
			for _, attempt := range []int{1, 63, 64, 900} {
				row.Attempt = attempt
				assert.True(t, judge.Keep(&row), "pairs %v: pair %d attempt %d", numbers, n, attempt)
				assert.Equal(t, RowRepeated, judge.Fault(&row), "pairs %v: pair %d attempt %d again", numbers, n, attempt)
			}
			row.Attempt = 2
			row.Arm = pairbench.Control
			assert.Equal(t, RowOfThePlan, judge.Fault(&row), "the other arm's attempt is its own")
			swapped := row
			swapped.Order = pairbench.AB
			if row.Order == pairbench.AB {
				swapped.Order = pairbench.BA
			}
			assert.Equal(t, RowInAnotherOrder, judge.Fault(&swapped))
		}
		for _, n := range []int{-1, 4, 99999, 100001, 1 << 40} {
			row := pairbench.Row{RunID: "r1", Intent: "a", Stage: pairbench.StagePair, Pair: n, Order: pairbench.AB,
				Arm: pairbench.Control, Attempt: 1}
			assert.Equal(t, RowOfNoPlannedPair, judge.Fault(&row), "pairs %v: pair %d", numbers, n)
		}
	}
}

// execPlan is a plan of intents a, b and c (as many as intentsPairs names),
// each with its pairs in alternating order.
func execPlan(intentsPairs map[string]int, domains map[string]string) *Plan {
	p := &Plan{V: PlanVersion, RunID: "r1", Alpha: 0.05, Model: Model{Provider: "scripted", ID: "m"}}
	for _, id := range []string{"a", "b", "c"} {
		n, ok := intentsPairs[id]
		if !ok {
			continue
		}
		in := PlannedIntent{ID: id, Domain: domains[id], Class: "pinned"}
		for i := range n {
			in.Pairs = append(in.Pairs, PlannedPair{Pair: i, Order: []pairbench.Order{pairbench.AB, pairbench.BA}[i%2]})
		}
		p.Intents = append(p.Intents, in)
	}
	return p
}

// TestScanRowsOfAPlanKeepsItsTrials: a scan with a plan passes on only the
// trials of the plan, across the rows files, and returns what it left out
// as warnings and a count, nothing told anywhere else.
func TestScanRowsOfAPlanKeepsItsTrials(t *testing.T) {
	plan := execPlan(map[string]int{"a": 2}, map[string]string{"a": "d"})
	dir := RunDir{Path: t.TempDir()}
	trial := func(pair int, arm pairbench.Arm) pairbench.Row {
		return pairbench.Row{RunID: "r1", Intent: "a", Domain: "d", Stage: pairbench.StagePair, Pair: pair,
			Order: plan.Intents[0].Pairs[pair].Order, Arm: arm, Attempt: 1, Outcome: pairbench.Correct}
	}
	foreign := trial(1, pairbench.Control)
	foreign.RunID = "r9"
	write := func(rel string, rows ...pairbench.Row) {
		var b []byte
		for _, r := range rows {
			var err error
			b, err = pairbench.AppendRow(b, r)
			require.NoError(t, err)
		}
		require.NoError(t, dir.WriteFile(rel, b))
	}
	write(RowsFile, trial(0, pairbench.Control), trial(0, pairbench.Treatment), foreign)
	write(RowsFileOf(1), trial(1, pairbench.Control), trial(0, pairbench.Control)) // the last repeats a trial

	var kept []string
	read, err := dir.ScanRows(RowQuery{Plan: plan, Skip: pairbench.FieldTrialDir}, func(r *pairbench.Row) {
		kept = append(kept, fmt.Sprintf("%d-%s", r.Pair, r.Arm))
	})
	require.NoError(t, err)
	assert.Equal(t, []string{"0-control", "0-treatment", "1-control"}, kept)
	assert.Equal(t, 2, read.LeftOut)
	var said []string
	for _, p := range read.Warnings {
		said = append(said, p.String())
	}
	assert.Equal(t, []string{
		dir.Path + `: left out 1 rows whose run_id is not "r1"`,
		dir.Path + ": left out 1 rows that repeat a trial recorded before them (same pair, arm and attempt)",
	}, said)
}
