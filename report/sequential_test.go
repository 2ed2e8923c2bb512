package report

import (
	"math"
	"testing"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/stats"
	"github.com/stretchr/testify/assert"
)

// TestStop: a claiming verdict stops at any look; futility before the
// last when both pooled tests are far from significance; the last look
// always ends the run.
func TestStop(t *testing.T) {
	d := stats.DefaultDesign()
	r := &Report{Alpha: 0.0157, Verdict: pairbench.Faster}
	stop, why := Stop(d, r, 1)
	assert.True(t, stop)
	assert.Contains(t, why, "look 2 of 3: the verdict faster")

	r = &Report{Alpha: d.LookAlpha(0.05, 0), Looks: &Looked{Pairs: []int{4, 8, 12}, Look: 1, RunAlpha: 0.05},
		Verdict: pairbench.NoSignal, Headline: &Headline{Speed: PooledSpeed{P: 0.6}, Accuracy: PooledAccuracy{P: 0.9}}}
	stop, why = Stop(d, r, 0)
	assert.True(t, stop)
	assert.Contains(t, why, "futility")
	r.Headline.Speed.P = 0.1
	stop, _ = Stop(d, r, 0)
	assert.False(t, stop, "a trend keeps the run going")
	stop, why = Stop(d, r, 2)
	assert.True(t, stop)
	assert.Contains(t, why, "every planned pair is done")
	assert.False(t, math.IsNaN(d.LookAlpha(0.05, 2)))
}
