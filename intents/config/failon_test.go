package config

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestConfigFailOn: .pairbench.yml's fail_on names labels and worse,
// comma-separated; a name that is neither is a problem at its line, and the
// configuration then fails on nothing.
func TestConfigFailOn(t *testing.T) {
	cfg, err := Parse(File, []byte("fail_on: worse, less accurate\n"))
	require.NoError(t, err)
	assert.Equal(t, []string{"worse", "less accurate"}, cfg.FailOnLabels())

	cfg, err = Parse(File, []byte("compare: both\nfail_on: worse, less acurate\n"))
	var ps Problems
	require.ErrorAs(t, err, &ps)
	assert.Equal(t, `.pairbench.yml:2: fail_on: "less acurate" is not a label (want labels such as less accurate, slower, or worse)`, ps.Error())
	assert.Empty(t, cfg.FailOnLabels())

	cfg, err = Parse(File, []byte("paths:\n  intents: bench/intents\n"))
	require.NoError(t, err)
	assert.Empty(t, cfg.FailOnLabels())
}
