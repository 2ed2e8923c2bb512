package report

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestStopNoteIsTheReportsWords: StopNote, which the service's check run
// shows while the report of a stopped run is not yet written, says where
// and why in the words of the report's note; it says nothing of a run that
// goes on or went through its looks.
func TestStopNoteIsTheReportsWords(t *testing.T) {
	futility := "the pooled speed p 0.6 and accuracy p 1 are both above 0.2"
	assert.Equal(t, "Look 2 of 3: the run, every intent with it, stopped here for futility: "+futility+
		" (non-binding: a resume with more pairs may go on).", StopNote(2, 3, StopFutility, futility))
	efficacy := "the verdict faster was reached at level 0.000687"
	assert.Equal(t, "Look 1 of 3: the run, every intent with it, stopped here for efficacy: "+efficacy+".",
		StopNote(1, 3, StopEfficacy, efficacy))
	assert.Empty(t, StopNote(3, 3, StopComplete, "every planned pair is done"))
	assert.Empty(t, StopNote(0, 3, "", ""))

	for _, l := range []Looked{
		{Pairs: []int{4, 8, 12}, Look: 1, RunAlpha: 0.05, Stop: StopEfficacy, Reason: efficacy},
		{Pairs: []int{4, 8, 12}, Look: 2, RunAlpha: 0.05, Stop: StopFutility, Reason: futility},
	} {
		_, why, _ := strings.Cut(StopNote(l.Look, len(l.Pairs), l.Stop, l.Reason), ": ")
		why = strings.TrimSuffix(why, ".")
		assert.Contains(t, l.note(0.01), "pairs per intent): "+why+"; this look is decided", "the note's words")
	}
}
