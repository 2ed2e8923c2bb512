package stats

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench"
)

func TestParseGate(t *testing.T) {
	got, err := ParseGate("less accurate, slower")
	require.NoError(t, err)
	assert.Equal(t, []pairbench.Label{pairbench.LessAccurate, pairbench.Slower}, got)
	_, err = ParseGate("worse")
	assert.ErrorContains(t, err, `"worse" is not a label`)
	_, err = ParseGate(" , ")
	assert.Error(t, err)
}

// TestGate: the verdict and benched intents' labels fail a gate; placebo
// intents and unfinished runs never do.
func TestGate(t *testing.T) {
	r := &Report{Verdict: pairbench.Faster, Intents: []Intent{
		{ID: "a", Label: pairbench.LessAccurate},
		{ID: "p", Label: pairbench.Slower, Placebo: true},
		{ID: "b", Label: pairbench.Faster},
	}}
	assert.Equal(t, []string{"intent a: less accurate"}, r.Gate([]pairbench.Label{pairbench.LessAccurate, pairbench.Slower}))
	assert.Equal(t, []string{"verdict: faster", "intent b: faster"}, r.Gate([]pairbench.Label{pairbench.Faster}))
	assert.Nil(t, r.Gate([]pairbench.Label{pairbench.Mixed}))
	assert.Nil(t, r.Gate(nil))
	r.Incomplete = &Incomplete{Pending: 1, Planned: 2}
	assert.Nil(t, r.Gate([]pairbench.Label{pairbench.LessAccurate}), "no verdict yet")
}
