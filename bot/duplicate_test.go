package bot_test

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/bot"
	"github.com/pairbench/pairbench/bot/githubtest"
	"github.com/pairbench/pairbench/state"
	"github.com/pairbench/pairbench/state/statetest"
)

// dispatchTwice opens the pull request and has its bench dispatched twice:
// the answer to the first dispatch is lost (the fake created the run), and
// GitHub's listing of the workflow's runs lags, so the dispatch job's retry
// does not find that run and dispatches again. With holdSecond, the answer
// to the second dispatch is held until release is called. It returns the
// bench's run id and the two Actions runs, in the order dispatched.
func (f *fixture) dispatchTwice(t *testing.T, holdSecond bool) (run string, first, second int64, release func()) {
	t.Helper()
	gate := make(chan struct{})
	release = sync.OnceFunc(func() { close(gate) })
	t.Cleanup(release)
	var dispatches atomic.Int32
	f.changeAnswers(func(r *http.Request, resp *http.Response, err error) (*http.Response, error) {
		switch {
		case err != nil:
		case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/dispatches"):
			n := dispatches.Add(1)
			if n == 1 {
				resp.Body.Close()
				return nil, errors.New("connection reset by peer")
			}
			if n == 2 && holdSecond {
				if err := waitGate(r, resp, gate); err != nil {
					return nil, err
				}
			}
		case r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/runs"):
			resp.Body.Close()
			return &http.Response{StatusCode: http.StatusOK, Status: "200 OK", Request: r,
				Header: http.Header{"Content-Type": {"application/json; charset=utf-8"}},
				Body:   io.NopCloser(strings.NewReader(`{"total_count":0,"workflow_runs":[]}`))}, nil
		}
		return resp, err
	})
	f.accept(t, "pull_request", payload(t, "pull_request.opened.json", nil))
	var ds []githubtest.Dispatch
	require.Eventually(t, func() bool {
		ds = f.gh.Dispatches(repoName)
		return len(ds) == 2
	}, 30*time.Second, 10*time.Millisecond, "the bench was not dispatched twice")
	run = ds[0].Inputs["run_id"].(string)
	require.Equal(t, run, ds[1].Inputs["run_id"], "both dispatches are of the one bench")
	return run, ds[0].RunID, ds[1].RunID, release
}

// workflowRunInProgress is the workflow_run delivery of a run that started.
func workflowRunInProgress(t *testing.T, id int64, run string, edits map[string]any) []byte {
	t.Helper()
	p := withEdits(t, workflowRunPayload(t, id, run, ""), map[string]any{
		"action": "in_progress", "workflow_run.status": "in_progress", "workflow_run.conclusion": nil})
	return withEdits(t, p, edits)
}

// cancelled returns the Actions runs cancelled on the fake, in order.
func (f *fixture) cancelled() []int64 {
	var out []int64
	f.gh.Repo(repoName, func(r *githubtest.Repo) { out = append(out, r.Cancelled...) })
	return out
}

// TestASecondRunOfABenchIsCancelledWhenItStarts: the bench was dispatched
// twice and the dispatch recorded the second run. The first run's
// workflow_run "in_progress" names the bench by its title: the service
// cancels that run, so it does not hold a self-hosted runner for a whole
// bench, and the recorded run ends the bench. Runs it did not dispatch
// (a fork's pull_request run, another repository's, another workflow's),
// titled for the bench, are not cancelled, nor is the recorded run.
func TestASecondRunOfABenchIsCancelledWhenItStarts(t *testing.T) {
	t.Parallel()
	for _, dialect := range statetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			f := newFixtureOn(t, dialect, actions)
			run, first, second, _ := f.dispatchTwice(t, false)
			f.settle(t)
			require.Equal(t, second, f.benches(t)[0].WorkflowRunID, "the dispatch recorded the run it was answered with")

			for _, edits := range []map[string]any{
				{"workflow_run.event": "pull_request"},
				{"workflow_run.head_repository.full_name": "stranger/Hello-World"},
				{"workflow_run.path": ".github/workflows/other.yml"},
			} {
				f.deliver(t, "workflow_run", workflowRunInProgress(t, first, run, edits))
			}
			f.deliver(t, "workflow_run", workflowRunInProgress(t, second, run, nil))
			require.Empty(t, f.cancelled(), "no run the service did not dispatch, nor the recorded one, was cancelled")

			f.deliver(t, "workflow_run", workflowRunInProgress(t, first, run, nil))
			assert.Equal(t, []int64{first}, f.cancelled(), "the duplicate run was cancelled")
			wr, _ := f.gh.WorkflowRun(repoName, first)
			assert.Equal(t, "cancelled", wr.Conclusion)

			// The cancelled run's completion ends nothing; the recorded run's does.
			f.deliver(t, "workflow_run", workflowRunPayload(t, first, run, "cancelled"))
			require.False(t, f.benches(t)[0].Over())
			f.storeReport(t, bot.RunID(run), pairbench.Better)
			f.completeWorkflow(t, run, "success")
			bn := f.benches(t)[0]
			assert.Equal(t, state.BenchDone, bn.State)
			assert.Equal(t, second, bn.WorkflowRunID)
			assert.Equal(t, []int64{first}, f.cancelled(), "the recorded run was not cancelled")
			assert.Equal(t, []string{"bench: better"}, f.gh.IssueLabels(repoName, prNumber))
		})
	}
}

// TestADispatchThatFindsAnotherRunRecordedCancelsItsOwn: the bench was
// dispatched twice, and the first run's "in_progress" delivery took the
// bench (by its title) before the answer to the second dispatch arrived.
// The dispatch, recording its run, finds the other one recorded: it leaves
// the bench to the recorded run and cancels its own.
func TestADispatchThatFindsAnotherRunRecordedCancelsItsOwn(t *testing.T) {
	t.Parallel()
	for _, dialect := range statetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			f := newFixtureOn(t, dialect, actions)
			run, first, second, release := f.dispatchTwice(t, true)
			f.waitHandled(t, f.accept(t, "workflow_run", workflowRunInProgress(t, first, run, nil)))
			require.Equal(t, first, f.benches(t)[0].WorkflowRunID, "the started run took the bench")
			release()
			f.settle(t)
			assert.Equal(t, []int64{second}, f.cancelled(), "the dispatch cancelled its duplicate run")
			assert.Equal(t, first, f.benches(t)[0].WorkflowRunID)

			f.storeReport(t, bot.RunID(run), pairbench.Better)
			f.completeWorkflow(t, run, "success")
			assert.Equal(t, state.BenchDone, f.benches(t)[0].State)
			assert.Equal(t, []int64{second}, f.cancelled())
		})
	}
}
