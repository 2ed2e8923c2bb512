package runner

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/pairbench/pairbench/rundir"
)

func TestPlanCaps(t *testing.T) {
	assert.Equal(t, Caps{Time: 90 * time.Second, Turns: 3, SpendUSD: 0.25}, CapsOf(rundir.PlanCaps{TimeS: 90, Turns: 3, SpendUSD: 0.25}))
}
