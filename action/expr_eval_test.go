package action

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The step tests trust this evaluator to decide which of action.yml's steps
// run and with what; these cases pin it to GitHub's rules.
func TestExprEvaluator(t *testing.T) {
	c := &exprContext{vars: map[string]any{
		"inputs": map[string]any{"mode": "plan", "pr": "", "service": "false", "time-cap": "30"},
		"github": map[string]any{"event": map[string]any{"pull_request": map[string]any{"number": 7.0}}},
		"steps":  map[string]any{"bench": map[string]any{"outputs": map[string]any{"report-dir": "/r"}}},
	}}
	for src, want := range map[string]any{
		"inputs.mode == 'run' || inputs.mode == 'plan'": true,
		"inputs.mode == 'PLAN'":                         true, // strings compare ignoring case
		"inputs.pr || github.event.pull_request.number": 7.0,  // || returns an operand
		"inputs.pr && 'x'":                              "",
		"inputs.TIME-CAP":                               "30", // names ignore case
		"inputs.time-cap == 30":                         true, // mixed types compare as numbers
		"!(inputs.service == 'true')":                   true,
		"steps.bench.outputs.report-dir != ''":          true,
		"steps.nope.outputs.x":                          nil,
		"'it''s'":                                       "it's",
		"github.event.pull_request.number == null":      false,
		"inputs.pr == null":                             true, // '' and null both count as 0
		"always()":                                      true,
	} {
		got, err := c.eval(src)
		require.NoError(t, err, src)
		assert.Equal(t, want, got, src)
	}
	for _, src := range []string{"format('{0}', inputs.pr)", "inputs.pr < 3", "fromJSON(inputs.pr)", "inputs.mode ==", "(inputs.mode"} {
		_, err := c.eval(src)
		assert.Error(t, err, src)
	}

	s, err := c.template("${{ inputs.time-cap }}s for PR ${{ inputs.pr || github.event.pull_request.number }}")
	require.NoError(t, err)
	assert.Equal(t, "30s for PR 7", s)

	ok, err := c.condition("inputs.mode == 'plan'")
	require.NoError(t, err)
	assert.True(t, ok)
	c.failed = true
	ok, err = c.condition("inputs.mode == 'plan'")
	require.NoError(t, err)
	assert.False(t, ok, "after a failure, a condition without a status function is false")
	ok, err = c.condition("${{ failure() && inputs.mode == 'plan' }}")
	require.NoError(t, err)
	assert.True(t, ok)
}
