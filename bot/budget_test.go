package bot_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/bot"
	"github.com/pairbench/pairbench/bot/githubtest"
	"github.com/pairbench/pairbench/state"
)

// The API budget of a benched pull request in steady state, from its
// opened webhook to its posted verdict (docs/serve.md, Capacity).
const (
	maxCallsPerPR  = 16
	maxWritesPerPR = 5
)

// TestABenchedPullRequestsAPIBudget counts, at the fake GitHub, every call
// pull requests cost from their opened webhook to their posted verdict, on
// both backends. The first pull request
// also pays what a process or an installation pays once (the installation
// token, an hour; the App's login; each label's creation in a repository);
// the next three are the steady state, at most 16 calls and 5 writes each.
// It used to take 17–18 calls and 7–8 writes for every one. It runs alone
// (not in parallel): on a loaded machine a bench might not start within
// QueuedCheckDelay, and its check run would then be created queued first.
func TestABenchedPullRequestsAPIBudget(t *testing.T) {
	for _, backend := range []string{bot.BackendLocal, bot.BackendActions} {
		t.Run(backend, func(t *testing.T) {
			f := newFixture(t, func(c *bot.Config) {
				// Shorter than the default 10 s, to keep the test short; long
				// enough for a bench to start first on a loaded machine.
				c.QueuedCheckDelay = 4 * time.Second
				if backend == bot.BackendActions {
					actions(c)
				}
			})
			bench := func(pr int) {
				f.gh.Repo(repoName, func(r *githubtest.Repo) {
					r.Pulls[pr] = &githubtest.Pull{Number: pr, HeadSHA: headSHA, HeadRef: "more",
						Files: []string{"domains/books.example/tools/find_books.js"}}
				})
				f.opened(t, map[string]any{"number": pr, "pull_request.number": pr})
				bn := benchOf(t, f, pr)
				f.storeReport(t, bot.RunID(bn.Run), pairbench.Better)
				if backend == bot.BackendActions {
					require.Eventually(t, func() bool { return benchOf(t, f, pr).WorkflowRunID != 0 }, 10*time.Second, 10*time.Millisecond)
					wf := benchOf(t, f, pr).WorkflowRunID
					f.gh.CompleteWorkflowRun(repoName, wf, "success")
					f.deliver(t, "workflow_run", workflowRunPayload(t, wf, bn.Run, "success"))
				} else {
					require.Eventually(t, func() bool { return len(f.runner.Runs()) == pr-1 }, 10*time.Second, 10*time.Millisecond)
					f.runner.finish(bot.RunID(bn.Run), nil)
				}
				require.Eventually(t, func() bool { return benchOf(t, f, pr).State == state.BenchDone }, 30*time.Second, 10*time.Millisecond)
				f.settle(t)
				require.Len(t, f.gh.CheckRuns(repoName), pr-1)
				require.Len(t, f.gh.Comments(repoName, pr), 1)
			}
			count := func(calls []githubtest.Call) (all, writes int) {
				for _, c := range calls {
					all++
					if c.Method != http.MethodGet {
						writes++
					}
				}
				return all, writes
			}
			bench(2)
			first, firstWrites := count(f.gh.Calls())
			t.Logf("the first pull request: %d calls, %d writes", first, firstWrites)
			for pr := 3; pr <= 5; pr++ {
				bench(pr)
			}
			all, writes := count(f.gh.Calls()[first:])
			t.Logf("three more: %d calls, %d writes", all, writes)
			assert.LessOrEqual(t, all, 3*maxCallsPerPR)
			assert.LessOrEqual(t, writes, 3*maxWritesPerPR)
		})
	}
}
