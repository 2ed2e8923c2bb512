package bot_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench/bot/githubtest"
)

// TestPullRequestConfigIsReadAsARunReadsIt gives the bot .pairbench.yml
// files a run refuses: the bot reads them with intents' own parser, as the
// run will, so what is wrong takes intents' default and the bench is
// dispatched; the run then fails, quoting each problem by file and line.
func TestPullRequestConfigIsReadAsARunReadsIt(t *testing.T) {
	t.Parallel()
	for name, config := range map[string]string{
		"a path outside and an unknown key": "paths:\n  intents: ../elsewhere\nschedule: nightly\n",
		"not YAML at all":                   "paths: [\n",
	} {
		// Named subtests: an unnamed one's directory holds a '#', which
		// the state's SQLite URI reads as the start of a fragment.
		t.Run(name, func(t *testing.T) { planWith(t, config) })
	}
}

func planWith(t *testing.T, config string) {
	f := newFixture(t)
	f.gh.Repo(repoName, func(r *githubtest.Repo) {
		files := map[string]string{}
		for k, v := range registryFiles {
			files[k] = v
		}
		files[".pairbench.yml"] = config
		r.Files[headSHA] = files
	})
	f.opened(t, nil)
	benches := f.benches(t)
	require.Len(t, benches, 1, "a configuration with problems still plans, with intents' defaults: %q", config)
	assert.Equal(t, []string{"books.example"}, benches[0].Domains)
}
