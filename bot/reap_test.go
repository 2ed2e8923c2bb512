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
	t.Parallel()
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
	t.Parallel()
	f := newFixture(t, func(c *bot.Config) { c.ReapEvery = 300 * time.Millisecond })
	f.opened(t, nil)
	bn := f.benches(t)[0]
	f.waitRuns(t, 1)
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

// TestTheRunTimeoutCountsFromTheStart: two local benches, one at a time.
// The second waits in the queue for half of RunTimeout behind the first,
// then starts: it is not failed as vanished for its wait (it used to be,
// RunTimeout after it was recorded), and it finishes with its verdict.
//
// The times are the ones the bot recorded, not the test's: the state is
// read once RunTimeout has passed since the second was recorded (and the
// reaper has had several turns since), which leaves RunTimeout/2 and the
// time it took to start for a slow machine before RunTimeout has passed
// since it started.
func TestTheRunTimeoutCountsFromTheStart(t *testing.T) {
	t.Parallel()
	const runTimeout, reapEvery = 10 * time.Second, 200 * time.Millisecond
	f := newFixture(t, func(c *bot.Config) { c.RunTimeout, c.ReapEvery = runTimeout, reapEvery })
	openPRs(t, f, 2)
	first, second := benchOf(t, f, 3), benchOf(t, f, 4)
	f.waitRuns(t, 1)
	time.Sleep(time.Until(second.Created.Add(runTimeout / 2)))
	f.storeReport(t, bot.RunID(first.Run), "better")
	f.runner.finish(bot.RunID(first.Run), nil)
	f.waitRuns(t, 2)
	started := benchOf(t, f, 4)
	require.False(t, started.Dispatched.IsZero())
	// Past RunTimeout since it was recorded, and seven turns of the reaper.
	time.Sleep(time.Until(started.Created.Add(runTimeout + 7*reapEvery)))
	now := benchOf(t, f, 4)
	require.Equal(t, state.BenchRunning, now.State, "%s (recorded %s, started %s after)", now.Reason,
		now.Created.Format(time.StampMilli), now.Dispatched.Sub(now.Created))
	f.storeReport(t, bot.RunID(second.Run), "faster")
	f.runner.finish(bot.RunID(second.Run), nil)
	require.Eventually(t, func() bool { return benchOf(t, f, 4).State == state.BenchDone }, patience, 10*time.Millisecond)
}

// TestABenchWaitsInTheQueueAtMostQueueTimeout: a bench that cannot start
// (the one local slot is busy) is failed after QueueTimeout, saying so.
func TestABenchWaitsInTheQueueAtMostQueueTimeout(t *testing.T) {
	t.Parallel()
	f := newFixture(t, func(c *bot.Config) { c.QueueTimeout, c.ReapEvery = time.Second, 200*time.Millisecond })
	openPRs(t, f, 2)
	require.Eventually(t, func() bool { return benchOf(t, f, 4).State == state.BenchFailed }, 10*time.Second, 10*time.Millisecond)
	assert.Contains(t, benchOf(t, f, 4).Reason, "waited more than 1s in the queue")
	assert.Equal(t, state.BenchRunning, benchOf(t, f, 3).State, "the running bench has its own timeout")
}

// benchOf returns the newest bench of pull request pr.
func benchOf(t *testing.T, f *fixture, pr int) state.Bench {
	t.Helper()
	var out []state.Bench
	require.NoError(t, f.bot.State().View(context.Background(), func(tx *state.Tx) (err error) {
		out, err = tx.BenchesOfPull(context.Background(), repoName, pr)
		return err
	}))
	require.NotEmpty(t, out)
	return out[0]
}
