package bot_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/bot"
	"github.com/pairbench/pairbench/bot/githubtest"
	"github.com/pairbench/pairbench/report"
	"github.com/pairbench/pairbench/state"
)

// TestFailOnDecidesTheCheckRun: .pairbench.yml's fail_on on the pull
// request's base branch decides the check run's conclusion through the
// report's gate. The pull request's own copy drops fail_on, and is not
// heeded: the gate is the base's. A label fail_on names fails the check
// (the summary says what failed it), and so does head worse than base with
// worse; a label it does not name, even slower, does not.
func TestFailOnDecidesTheCheckRun(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		failOn     string
		verdict    pairbench.Label
		worse      bool
		conclusion string
		says       string
	}{
		"a named label":           {"slower", pairbench.Faster, false, "failure", "**Failed `fail_on: slower`**: intent books-price-of-title: slower."},
		"worse than base":         {"worse", pairbench.Faster, true, "failure", "intent books-cheapest-by-author: worse than base"},
		"a label it did not name": {"worse, less accurate", pairbench.Slower, false, "neutral", ""},
		"no fail_on":              {"", pairbench.Slower, false, "failure", ""},
	} {
		t.Run(strings.ReplaceAll(name, " ", "-"), func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			f.gh.Repo(repoName, func(r *githubtest.Repo) {
				base := map[string]string{}
				for k, v := range registryFiles {
					base[k] = v
				}
				if tc.failOn != "" {
					base[".pairbench.yml"] += "fail_on: " + tc.failOn + "\n"
				}
				r.Files[baseSHA] = base
			})
			f.opened(t, nil)
			bn := f.benches(t)[0]
			assert.Equal(t, strings.ReplaceAll(tc.failOn, " ", ""), strings.ReplaceAll(bn.FailOn, " ", ""))

			rep := readReport(t)
			rep.Verdict, rep.RunID = tc.verdict, bn.Run
			for i := range rep.Intents {
				if rep.Intents[i].Label == pairbench.LessAccurate {
					rep.Intents[i].Label = pairbench.Inconclusive // only the case's labels
				}
				if tc.worse && rep.Intents[i].ID == "books-cheapest-by-author" {
					rep.Intents[i].NonInferiority = &report.NonInferiority{Result: report.Worse}
				}
			}
			f.finishWith(t, rep)

			runs := f.gh.CheckRuns(repoName)
			require.Len(t, runs, 1)
			assert.Equal(t, tc.conclusion, runs[0].Conclusion)
			if tc.says != "" {
				assert.Contains(t, runs[0].Summary, tc.says)
			} else {
				assert.NotContains(t, runs[0].Summary, "fail_on")
			}
		})
	}
}

// finishWith stores rep as its run's report and ends that local run, as a
// real bench does, waiting for the bot to post it.
func (f *fixture) finishWith(t *testing.T, rep *report.Report) {
	t.Helper()
	data, err := json.Marshal(rep)
	require.NoError(t, err)
	require.NoError(t, f.store.Put(context.Background(), rep.RunID+"/report.json", bytes.NewReader(data)))
	f.runner.finish(bot.RunID(rep.RunID), nil)
	f.waitBench(t, rep.RunID, state.BenchDone)
}
