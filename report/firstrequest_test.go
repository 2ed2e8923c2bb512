package report

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench"
)

// TestSpeedFromFirstRequest: the agents' start-up (the same CLI start in
// both arms) pulls the wall-time ratio towards 1; the figures from the
// first model request leave it out, beside the wall-time ones, and say
// nothing when a row lacks the start-up.
func TestSpeedFromFirstRequest(t *testing.T) {
	pair := func(c, tr float64, startup float64) []pairRef {
		rc := &pairbench.Row{WallSeconds: c, StartupSeconds: startup, Outcome: pairbench.Correct}
		rt := &pairbench.Row{WallSeconds: tr, StartupSeconds: startup, Outcome: pairbench.Correct}
		a, _ := newRecord(rc, nil)
		b, _ := newRecord(rt, nil)
		return []pairRef{{c: &a, t: &b}}
	}
	var pairs []pairRef
	for range 5 {
		pairs = append(pairs, pair(7.2, 5.4, 3.6)...)
	}
	s, _ := speedOf(pairs, true)
	require.NotNil(t, s.FromFirstRequest)
	assert.InDelta(t, 7.2/5.4, *s.RatioOfMedians, 1e-9, "wall time: 1.33x")
	assert.InDelta(t, 3.6, s.FromFirstRequest.MedianControl, 1e-6)
	assert.InDelta(t, 1.8, s.FromFirstRequest.MedianTreatment, 1e-6)
	assert.InDelta(t, 2, *s.FromFirstRequest.RatioOfMedians, 1e-6, "from the first request: 2x")
	assert.InDelta(t, 2, s.FromFirstRequest.Speedup, 1e-6)
	assert.Contains(t, viewSpeed(s), "from the first model request (the agents' start-up left out): median 3.6 s control vs 1.8 s treatment (ratio of medians 2.00×)")

	s, _ = speedOf(append(pairs, pair(7, 5, 0)...), true)
	assert.Nil(t, s.FromFirstRequest, "a row without its start-up: no figure")
}
