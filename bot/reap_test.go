package bot_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench/bot"
	"github.com/pairbench/pairbench/bot/githubtest"
	"github.com/pairbench/pairbench/state"
)

// TestTheReaperEndsVanishedBenches: an Actions bench whose workflow never
// reports ends as failed after RunTimeout, with the reason on its check run
// (never left queued or in progress), and its run is cancelled.
func TestTheReaperEndsVanishedBenches(t *testing.T) {
	f := newFixture(t, actions, func(c *bot.Config) { c.RunTimeout, c.ReapEvery = 2*time.Second, 300*time.Millisecond })
	f.opened(t, nil)
	run := f.benches(t)[0].Run
	f.waitBench(t, run, state.BenchFailed)
	bn := f.benches(t)[0]
	assert.Contains(t, bn.Reason, "The run vanished")
	runs := f.gh.CheckRuns(repoName)
	require.Len(t, runs, 1)
	assert.Equal(t, "failure", runs[0].Conclusion)
	assert.Contains(t, runs[0].Summary, "The run vanished")
	var cancelled []int64
	f.gh.Repo(repoName, func(r *githubtest.Repo) { cancelled = r.Cancelled })
	assert.Equal(t, []int64{bn.WorkflowRunID}, cancelled)
}

// TestTheReaperEndsABenchWhoseJobEnded: while the service is stopped, the
// local bench's job (put back in the queue by the shutdown) is cancelled
// behind its back, by an operator or a bug. After the restart the reaper
// sees the bench's job ended without a result and fails the bench with
// that reason, on its check run.
func TestTheReaperEndsABenchWhoseJobEnded(t *testing.T) {
	f := newFixture(t, func(c *bot.Config) { c.ReapEvery = 300 * time.Millisecond })
	f.opened(t, nil)
	bn := f.benches(t)[0]
	require.Eventually(t, func() bool { return len(f.runner.Runs()) == 1 }, 10*time.Second, 10*time.Millisecond)
	f.stop(t)
	st, err := state.Open(context.Background(), f.cfg.State)
	require.NoError(t, err)
	require.NoError(t, st.CancelJob(context.Background(), bn.JobID))
	require.NoError(t, st.Close())
	f.start(t)
	f.waitBench(t, bn.Run, state.BenchFailed)
	assert.Contains(t, f.benches(t)[0].Reason, "job ended without a result")
	assert.Len(t, f.runner.Runs(), 1, "the cancelled job never ran again")
	assert.Equal(t, "failure", f.gh.CheckRuns(repoName)[0].Conclusion)
}
