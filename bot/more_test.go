package bot_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/bot"
	"github.com/pairbench/pairbench/state"
)

// TestBenchMoreTopsUpTheHeadsLastRun: /bench more reopens the head's last
// finished bench under its run id with more pairs per intent, which the
// local backend resumes (the runner's top-up); its progress and verdict go
// to a new check run, since a completed one never reopens. While a bench
// runs, before any bench, after a failed one, and on the Actions backend,
// it refuses, saying why.
func TestBenchMoreTopsUpTheHeadsLastRun(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	lastReply := func() string {
		t.Helper()
		cs := f.gh.Comments(repoName, prNumber)
		require.NotEmpty(t, cs)
		return cs[len(cs)-1].Body
	}
	f.comment(t, writer, "/bench more")
	assert.Contains(t, lastReply(), "Nothing to top up")

	f.opened(t, nil)
	bn := f.benches(t)[0]
	f.comment(t, writer, "/bench more")
	assert.Contains(t, lastReply(), "is still running: `/bench more` tops a run up once it has ended")
	f.finishLocal(t, bn.Run, pairbench.Inconclusive)

	f.comment(t, writer, "/bench more 5")
	assert.Contains(t, lastReply(), "with 5 more pairs per intent (25 in all)")
	cur := f.benches(t)[0]
	assert.Equal(t, bn.Run, cur.Run, "the same run")
	assert.Equal(t, 25, cur.Pairs)
	assert.False(t, cur.Over(), "reopened")
	require.Eventually(t, func() bool { return len(f.runner.Runs()) == 2 }, 10*time.Second, 10*time.Millisecond)
	again := f.runner.Runs()[1]
	assert.Equal(t, bot.RunID(bn.Run), again.RunID, "resumed by its run id")
	assert.Equal(t, 25, again.Pairs)
	assert.Equal(t, baseSHA, again.Base, "compared as before")
	f.finishLocal(t, bn.Run, pairbench.Better)

	runs := f.gh.CheckRuns(repoName)
	require.Len(t, runs, 2, "the top-up has a check run of its own")
	assert.Equal(t, bn.Run, runs[0].ExternalID)
	assert.Equal(t, "neutral", runs[0].Conclusion, "inconclusive")
	assert.Equal(t, bn.Run+"+1", runs[1].ExternalID)
	assert.Equal(t, "completed", runs[1].Status)
	assert.Contains(t, runs[1].Title, "bench: better")
	assert.Equal(t, []string{"bench: better"}, f.gh.IssueLabels(repoName, prNumber), "the topped-up verdict is the head's")

	f.comment(t, writer, "/bench more")
	assert.Contains(t, lastReply(), "already reached a verdict, `better`: its α is spent on that claim",
		"a run that claimed a difference is not topped up (the engine would refuse it too)")
	assert.True(t, f.benches(t)[0].Over(), "not reopened")
	assert.Len(t, f.runner.Runs(), 2, "nothing ran")

	c := newFixture(t)
	c.opened(t, nil)
	bn = c.benches(t)[0]
	c.finishLocal(t, bn.Run, pairbench.NoSignal)
	c.comment(t, writer, "/bench more")
	cs := c.gh.Comments(repoName, prNumber)
	assert.Contains(t, cs[len(cs)-1].Body, "with 20 more pairs per intent (40 in all)", "as many again by default")
	f = c
	f.runner.finish(bot.RunID(bn.Run), errBoom)
	f.waitBench(t, bn.Run, state.BenchFailed)
	f.comment(t, writer, "/bench more")
	assert.Contains(t, lastReply(), "ended without a verdict (failed)")

	a := newFixture(t, actions)
	a.opened(t, nil)
	run := a.benches(t)[0].Run
	a.storeReport(t, bot.RunID(run), pairbench.Inconclusive)
	a.completeWorkflow(t, run, "success")
	a.waitBench(t, run, state.BenchDone)
	a.comment(t, writer, "/bench more 10")
	cs = a.gh.Comments(repoName, prNumber)
	assert.Contains(t, cs[len(cs)-1].Body, "ran on GitHub Actions, where pairbench cannot top a run up yet. Comment `/bench run --pairs 30`")
}
