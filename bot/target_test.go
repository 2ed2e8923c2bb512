package bot_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench/bot"
)

func TestParseTarget(t *testing.T) {
	t.Parallel()
	sha := "0123456789abcdef0123456789abcdef01234567"
	got, err := bot.ParseTarget("acme/registry.v2", 42, sha)
	require.NoError(t, err)
	assert.Equal(t, bot.Target{Owner: "acme", Repo: "registry.v2", PR: 42, SHA: sha}, got)
	_, err = bot.ParseTarget("acme/registry", 1, strings.Repeat("ab", 32))
	assert.NoError(t, err, "a SHA-256 commit id")

	for want, bad := range map[string][3]any{
		"--repo":  {"acme", 42, sha},
		"--repo ": {"acme/registry/x", 42, sha},
		"--pr":    {"acme/registry", 0, sha},
		"--sha":   {"acme/registry", 42, "0123abc"},
		"--sha ":  {"acme/registry", 42, strings.ToUpper(sha)},
	} {
		_, err := bot.ParseTarget(bad[0].(string), bad[1].(int), bad[2].(string))
		assert.ErrorContains(t, err, strings.TrimSpace(want), "%v", bad)
	}
}
