package report

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench"
)

// TestBuildLeavesOutPairsWhoseArmsRanInDifferentWebMCPEnvironments: a pair
// whose arms had different WebMCP (the browser's own in one, the polyfill
// in the other; another browser version or other switches) is not counted,
// and every rendering says which pairs and why; a part only one arm
// recorded (rows from before the fields) differs from nothing.
func TestBuildLeavesOutPairsWhoseArmsRanInDifferentWebMCPEnvironments(t *testing.T) {
	env := func(browser string, switches ...string) *pairbench.WebMCPEnv {
		return &pairbench.WebMCPEnv{Browser: browser, Switches: switches, DevTools: true}
	}
	rows := workedExample("books")
	for i := range rows {
		rows[i].WebMCPImpl = pairbench.WebMCPPolyfill
		rows[i].WebMCPEnv = env("Chrome/156.0.8078.114")
		rows[i].WebMCPEnv.FrameTools = map[string][]string{"F": {rows[i].Intent + string(rows[i].Arm)}} // never compared
	}
	rows[1].WebMCPImpl = pairbench.WebMCPNative                                        // pair 0
	rows[2].WebMCPEnv = env("Chrome/156.0.8078.114", "--enable-blink-features=WebMCP") // pair 1
	rows[5].WebMCPEnv = env("Chrome/157.0.1.1")                                        // pair 2
	rows[6].WebMCPEnv = nil                                                            // pair 3: not recorded in one arm
	rows[7].WebMCPImpl = ""

	rep := Build(planFor("books"), rows)
	in := rep.Intents[0]
	assert.Equal(t, []int{0, 1, 2}, in.Pairs.EnvDiffers)
	assert.Equal(t, 7, in.Pairs.Complete)
	assert.Equal(t, 0, in.Pairs.Missing, "not counted is not missing")
	full := Build(planFor("books"), workedExample("books")).Intents[0]
	assert.Equal(t, 10, full.Pairs.Complete)
	assert.Empty(t, full.Pairs.EnvDiffers)

	want := "pairs 0, 1, 2: their arms ran in different WebMCP environments"
	assert.Contains(t, Markdown(rep, MarkdownOptions{}), want)
	var html strings.Builder
	require.NoError(t, WriteHTML(&html, rep, HTMLOptions{}))
	assert.Contains(t, html.String(), want)
	assert.NotContains(t, Markdown(Build(planFor("books"), workedExample("books")), MarkdownOptions{}), "different WebMCP environments")
}

// TestEnvsFollowEachArmsLastAttempt: a retried arm's environment replaces
// its earlier attempt's.
func TestEnvsFollowEachArmsLastAttempt(t *testing.T) {
	var e envs
	a, b := envKey{impl: "polyfill"}, envKey{impl: "native"}
	e.note(0, 0, a)
	e.note(0, 1, b)
	assert.True(t, e.differ(0))
	e.note(0, 1, a)
	assert.False(t, e.differ(0))
	e.note(1, 0, b)
	e.note(1, 1, b)
	assert.False(t, e.differ(1), "both arms in one environment, even if not the first one seen")
}
