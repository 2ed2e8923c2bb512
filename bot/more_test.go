package bot_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/bot"
	"github.com/pairbench/pairbench/bot/githubtest"
	"github.com/pairbench/pairbench/state"
)

// TestBenchMoreTopsUpTheHeadsLastRun: /bench more reopens the head's last
// finished bench under its run id with more pairs per intent, which the
// local backend resumes (the runner's top-up); its progress and verdict go
// to a new check run, since a completed one never reopens. While a bench
// runs, before any bench and after a failed one, it refuses, saying why.
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

}

// TestBenchMoreOnActionsDispatchesTheTopUp: on the Actions backend /bench
// more dispatches the workflow again for the same run id, with the larger
// pairs and top_up (the workflow resumes the run from the store and names
// its run "pairbench <run id>+1"); only that run ends the reopened bench,
// not a late delivery of the first run, and its report is the head's
// verdict. A run that claimed a difference is refused as on the local
// backend, undispatched; a run that stopped claiming nothing (no signal,
// as a futility stop ends) goes on. A workflow that declares no top_up is
// not dispatched a top-up it would bench afresh.
func TestBenchMoreOnActionsDispatchesTheTopUp(t *testing.T) {
	t.Parallel()
	a := newFixture(t, actions)
	lastReply := func() string {
		t.Helper()
		cs := a.gh.Comments(repoName, prNumber)
		require.NotEmpty(t, cs)
		return cs[len(cs)-1].Body
	}
	a.opened(t, nil)
	run := a.benches(t)[0].Run
	a.storeReport(t, bot.RunID(run), pairbench.NoSignal)
	a.completeWorkflow(t, run, "success")
	a.waitBench(t, run, state.BenchDone)
	first := a.benches(t)[0]

	a.comment(t, writer, "/bench more 10")
	assert.Contains(t, lastReply(), "topping up run `"+run+"`")
	assert.Contains(t, lastReply(), "with 10 more pairs per intent (30 in all)")
	require.Eventually(t, func() bool { return len(a.gh.Dispatches(repoName)) == 2 }, 10*time.Second, 10*time.Millisecond)
	ds := a.gh.Dispatches(repoName)
	again := ds[1]
	assert.Equal(t, run, again.Inputs["run_id"], "the same run id: the run resumes from the store")
	assert.Equal(t, "30", again.Inputs["pairs"])
	assert.Equal(t, "1", again.Inputs["top_up"])
	assert.NotContains(t, ds[0].Inputs, "top_up", "a first bench sends no top_up")
	for _, k := range []string{"pr", "head_sha", "domains", "intents", "base"} {
		assert.Equal(t, ds[0].Inputs[k], again.Inputs[k], "input %s as first dispatched", k)
	}
	wr, ok := a.gh.WorkflowRun(repoName, again.RunID)
	require.True(t, ok)
	assert.Equal(t, bot.WorkflowTitle(bot.RunID(run), 1), wr.DisplayTitle)
	require.Eventually(t, func() bool {
		cur := a.benches(t)[0]
		return cur.WorkflowRunID == again.RunID && cur.State == state.BenchRunning
	}, 10*time.Second, 10*time.Millisecond, "the top-up's run is recorded")

	// The first run's completion, delivered again late, names the bench
	// before its top-up: it ends nothing.
	a.deliver(t, "workflow_run", workflowRunPayload(t, first.WorkflowRunID, run, "success"))
	a.settle(t)
	assert.False(t, a.benches(t)[0].Over(), "the first run's late delivery did not end the top-up")

	a.storeReport(t, bot.RunID(run), pairbench.Better)
	a.completeWorkflow(t, run, "success")
	a.waitBench(t, run, state.BenchDone)
	assert.Equal(t, string(pairbench.Better), a.benches(t)[0].Verdict)
	runs := a.gh.CheckRuns(repoName)
	require.Len(t, runs, 2, "the top-up has a check run of its own")
	assert.Equal(t, run+"+1", runs[1].ExternalID)
	assert.Contains(t, runs[1].Title, "bench: better")
	assert.Equal(t, []string{"bench: better"}, a.gh.IssueLabels(repoName, prNumber))

	a.comment(t, writer, "/bench more")
	assert.Contains(t, lastReply(), "already reached a verdict, `better`: its α is spent on that claim")
	a.settle(t)
	assert.Len(t, a.gh.Dispatches(repoName), 2, "a claimed verdict is not dispatched a top-up")
	assert.True(t, a.benches(t)[0].Over())

	old := newFixture(t, actions)
	old.gh.Repo(repoName, func(r *githubtest.Repo) {
		r.WorkflowInputs = map[string][]string{bot.DefaultWorkflow: {"run_id", "pr", "head_sha", "domains", "intents", "base", "pairs", "model", "agent"}}
	})
	old.opened(t, nil)
	run = old.benches(t)[0].Run
	old.storeReport(t, bot.RunID(run), pairbench.Inconclusive)
	old.completeWorkflow(t, run, "success")
	old.waitBench(t, run, state.BenchDone)
	old.comment(t, writer, "/bench more")
	old.waitBench(t, run, state.BenchFailed)
	assert.Contains(t, old.benches(t)[0].Reason, "declares no top_up input, which `/bench more` needs to resume the run")
	assert.Len(t, old.gh.Dispatches(repoName), 1, "no top-up was dispatched")
}
