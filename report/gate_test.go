package report

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
	got, err = ParseGate("worse,less accurate")
	require.NoError(t, err)
	assert.Equal(t, []pairbench.Label{GateWorse, pairbench.LessAccurate}, got)
	_, err = ParseGate("not worse")
	assert.ErrorContains(t, err, `"not worse" is not a label`)
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
	assert.Nil(t, r.Gate([]pairbench.Label{GateWorse}), "no head against base")
	r.NonInferiority = Worse
	r.Intents[0].NonInferiority = &NonInferiority{Result: Worse}
	r.Intents[1].NonInferiority = &NonInferiority{Result: Worse}
	r.Intents[2].NonInferiority = &NonInferiority{Result: NotWorse}
	assert.Equal(t, []string{"head against base: worse", "intent a: worse than base"}, r.Gate([]pairbench.Label{GateWorse}))
	r.Incomplete = &Incomplete{Pending: 1, Planned: 2}
	assert.Nil(t, r.Gate([]pairbench.Label{pairbench.LessAccurate}), "no verdict yet")
}
