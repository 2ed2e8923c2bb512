package agenttest

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench/agent/launch"
	"github.com/pairbench/pairbench/rundir"
)

// Want is a step a transcript decodes to: its kind, turn, tool, a part of
// its text (or, for a call, of its arguments) and whether it is an error.
type Want struct {
	Kind rundir.StepKind
	Turn int
	Tool string
	Text string
	Err  bool
}

// Decodes checks that d decodes transcript, a transcript.jsonl with the
// line times times, to the steps wants.
func Decodes(t *testing.T, d launch.Decoder, transcript string, times []int64, wants []Want) []rundir.Step {
	t.Helper()
	got, err := launch.DecodeTranscript(strings.NewReader(transcript), times, d)
	require.NoError(t, err)
	require.Len(t, got, len(wants), "%+v", got)
	for i, w := range wants {
		assert.Equal(t, w.Kind, got[i].Kind, "step %d", i)
		assert.Equal(t, w.Turn, got[i].Turn, "step %d", i)
		assert.Equal(t, w.Tool, got[i].Tool, "step %d", i)
		assert.Contains(t, got[i].Text+string(got[i].Args), w.Text, "step %d", i)
		assert.Equal(t, w.Err, got[i].Error, "step %d", i)
	}
	return got
}
