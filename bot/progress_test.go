package bot_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/bot"
	"github.com/pairbench/pairbench/report"
	"github.com/pairbench/pairbench/rundir"
	"github.com/pairbench/pairbench/state"
)

// progressRunner is a local backend that reports progress as fast as its
// trials end, saying each time the hook has returned.
type progressRunner struct {
	start, stop chan struct{}
	returned    chan struct{}
}

func (r *progressRunner) Run(ctx context.Context, _ bot.Request, progress func(rundir.Progress)) error {
	close(r.start)
	<-r.stop
	for done := 1; done <= 20; done++ {
		progress(rundir.Progress{Done: done, Pairs: 20, Planned: 20})
		r.returned <- struct{}{}
	}
	<-ctx.Done()
	return ctx.Err()
}

// TestABlockedStoreDoesNotStallTrials: the engine calls the progress hook
// from the trial that ended, so a hook that waits holds that slot. While
// the service's database is blocked (a long transaction holds it until all
// twenty calls have returned), every call of the hook still returns; the
// count reaches the record once the database is free. The hook used to run
// a transaction with no timeout, stalling every slot behind it.
func TestABlockedStoreDoesNotStallTrials(t *testing.T) {
	t.Parallel()
	r := &progressRunner{start: make(chan struct{}), stop: make(chan struct{}), returned: make(chan struct{}, 20)}
	f := newFixture(t, func(c *bot.Config) { c.Runner = r })
	f.opened(t, nil)
	<-r.start

	held, release := make(chan struct{}), make(chan struct{})
	blocked := make(chan error, 1)
	go func() {
		blocked <- f.bot.State().Update(context.Background(), func(tx *state.Tx) error {
			if err := tx.RecordReply(context.Background(), repoName, prNumber, "dba", "block"); err != nil {
				return err
			}
			close(held)
			<-release
			return nil
		})
	}()
	<-held
	close(r.stop)
	for range 20 {
		select {
		case <-r.returned:
		case <-time.After(10 * time.Second):
			close(release)
			t.Fatal("a trial stalled behind the blocked database")
		}
	}
	close(release)
	require.NoError(t, <-blocked)
	require.Eventually(t, func() bool { return f.benches(t)[0].DonePairs == 20 }, 20*time.Second, 20*time.Millisecond,
		"the latest count is recorded once the database is free")
}

// lookRunner is a local backend whose run hands the bot the progress the
// test gives it, one at a time, as the engine's hook would, and ends when
// the test releases it.
type lookRunner struct {
	steps   chan rundir.Progress
	release chan error
}

func (r *lookRunner) Run(ctx context.Context, _ bot.Request, progress func(rundir.Progress)) error {
	for {
		select {
		case p, more := <-r.steps:
			if !more {
				select {
				case err := <-r.release:
					return err
				case <-ctx.Done():
					return ctx.Err()
				}
			}
			progress(p)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// TestTheCheckRunSaysTheLookAndWhereTheRunStopped: while a local bench of
// looks runs, its check run counts the pairs of the look under way and
// says which look it is, of how many, and the pairs planned in all, as the
// CLI's progress does; a new look shows at once, not a minute later. Once
// a look stops the run, the check run says at which look and why (the
// title briefly, the summary in the report's words) until the report is
// posted; /bench status says the same. They used to say only "N of M
// pairs done".
func TestTheCheckRunSaysTheLookAndWhereTheRunStopped(t *testing.T) {
	t.Parallel()
	r := &lookRunner{steps: make(chan rundir.Progress), release: make(chan error, 1)}
	f := newFixture(t, func(c *bot.Config) { c.Runner = r })
	f.opened(t, nil)
	run := f.benches(t)[0].Run
	shows := func(title, summary string) {
		t.Helper()
		require.Eventually(t, func() bool {
			runs := f.gh.CheckRuns(repoName)
			return len(runs) == 1 && runs[0].Title == title
		}, 20*time.Second, 10*time.Millisecond, "the check run never showed %q", title)
		assert.Equal(t, summary, f.gh.CheckRuns(repoName)[0].Summary)
	}
	bench := "Bench of ec26c3e: every intent of domain `books.example`, each domain against what its changes call for (base f95f852's tools where they changed), 20 pairs each."

	r.steps <- rundir.Progress{Done: 0, Pairs: 24, Planned: 24} // the adoption stage: no look yet
	r.steps <- rundir.Progress{Done: 0, Pairs: 8, Planned: 24, Look: 1, Looks: 3}
	shows("0 of 8 pairs done (look 1 of 3, 24 planned)",
		bench+" The bench is running: 0 of 8 pairs done (look 1 of 3, 24 planned).")

	r.steps <- rundir.Progress{Done: 8, Pairs: 16, Planned: 24, Look: 2, Looks: 3}
	shows("8 of 16 pairs done (look 2 of 3, 24 planned)",
		bench+" The bench is running: 8 of 16 pairs done (look 2 of 3, 24 planned).")

	reason := "the pooled speed p 0.81 and accuracy p 1 are both above 0.42, where either test's conditional power under the effect the run detects with 80% power falls below 0.6"
	r.steps <- rundir.Progress{Done: 16, Pairs: 16, Planned: 24, Look: 2, Looks: 3,
		Stop: &rundir.LookStop{Look: 2, Pairs: 8, Kind: report.StopFutility, Verdict: pairbench.NoSignal, Reason: reason}}
	shows("16 of 16 pairs done (stopped at look 2 of 3 for futility)",
		bench+" The bench stopped early: 16 of 16 pairs done (stopped at look 2 of 3 for futility). Look 2 of 3: the run, every intent with it, stopped here for futility: "+
			reason+" (non-binding: a resume with more pairs may go on). Its report follows.")

	f.comment(t, writer, "/bench status")
	comments := f.gh.Comments(repoName, prNumber)
	require.NotEmpty(t, comments)
	assert.Contains(t, comments[len(comments)-1].Body, "; 16 of 16 pairs done (stopped at look 2 of 3 for futility).")

	close(r.steps)
	f.storeReport(t, bot.RunID(run), pairbench.NoSignal)
	r.release <- nil
	f.waitBench(t, run, state.BenchDone)
	assert.Equal(t, "bench: no signal · this PR's tools (ec26c3e) against no tools", f.gh.CheckRuns(repoName)[0].Title, "the report takes over")
}
