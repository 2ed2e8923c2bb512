package rundir

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/pairbench/pairbench"
)

// TestTallyCountsPairsAsRowsArrive follows three pairs through their rows:
// one done at once, one done on its second attempt, one halfway.
func TestTallyCountsPairsAsRowsArrive(t *testing.T) {
	pairs := []PairSpec{{Intent: "a", Pair: 0, Order: pairbench.AB}, {Intent: "a", Pair: 1, Order: pairbench.BA}, {Intent: "b", Pair: 0, Order: pairbench.AB}}
	row := func(intent string, pair int, arm pairbench.Arm, attempt int, out pairbench.Outcome) pairbench.Row {
		return pairbench.Row{Intent: intent, Stage: pairbench.StagePair, Pair: pair, Arm: arm, Attempt: attempt, Outcome: out}
	}
	tally := NewTally(pairs, nil)
	assert.Equal(t, 3, tally.Pairs())
	steps := []struct {
		row        pairbench.Row
		done, half int
	}{
		{row("a", 0, pairbench.Control, 1, pairbench.Correct), 0, 1},
		{row("a", 0, pairbench.Treatment, 1, pairbench.Wrong), 1, 0},
		{row("a", 1, pairbench.Treatment, 1, pairbench.Correct), 1, 1},
		{row("a", 1, pairbench.Control, 1, pairbench.Aborted), 1, 0}, // it reruns whole: not halfway
		{row("a", 1, pairbench.Treatment, 2, pairbench.Timeout), 1, 1},
		{row("a", 1, pairbench.Control, 2, pairbench.Correct), 2, 0},
		{row("b", 0, pairbench.Control, 1, pairbench.Correct), 2, 1},
		{row("c", 0, pairbench.Control, 1, pairbench.Correct), 2, 1}, // not a planned pair
		{pairbench.Row{Intent: "b", Stage: pairbench.StageAdoption, Arm: pairbench.Treatment, Attempt: 1, Outcome: pairbench.Correct}, 2, 1},
	}
	for i, s := range steps {
		tally.Add(s.row)
		assert.Equal(t, s.done, tally.Done(), "step %d: done", i)
		assert.Equal(t, s.half, tally.Half(), "step %d: half", i)
	}
	jobs := tally.Pending()
	if assert.Len(t, jobs, 1) {
		assert.Equal(t, Job{Intent: "b", Stage: pairbench.StagePair, Pair: 0, Order: pairbench.AB, Attempt: 2, Tries: 2}, jobs[0])
	}

	var rows []pairbench.Row
	for _, s := range steps {
		rows = append(rows, s.row)
	}
	again := NewTally(pairs, rows)
	assert.Equal(t, tally.Done(), again.Done(), "a tally of the same rows read back agrees")
	assert.Equal(t, tally.Half(), again.Half())
}

// TestTallyCountsAPairListedTwiceOnce: a pair listed twice is one pair, as
// first listed, in its first place, and the caller's list is left as it was.
func TestTallyCountsAPairListedTwiceOnce(t *testing.T) {
	pairs := []PairSpec{{Intent: "a", Pair: 0, Order: pairbench.AB}, {Intent: "b", Pair: 3, Order: pairbench.BA},
		{Intent: "a", Pair: 0, Order: pairbench.BA, Profile: "later"}, {Intent: "a", Pair: 1, Order: pairbench.AB}}
	listed := slices.Clone(pairs)
	tally := NewTally(pairs, []pairbench.Row{
		{Intent: "a", Stage: pairbench.StagePair, Pair: 1, Arm: pairbench.Control, Attempt: 1, Outcome: pairbench.Correct},
		{Intent: "a", Stage: pairbench.StagePair, Pair: 1, Arm: pairbench.Treatment, Attempt: 1, Outcome: pairbench.Correct},
	})
	assert.Equal(t, 3, tally.Pairs())
	assert.Equal(t, 1, tally.Done())
	var pending []string
	for _, j := range tally.Pending() {
		pending = append(pending, fmt.Sprintf("%s %d %s %q", j.Intent, j.Pair, j.Order, j.Profile))
	}
	assert.Equal(t, []string{`a 0 AB ""`, `b 3 BA ""`}, pending)
	assert.Equal(t, listed, pairs)
}
