package bot_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench/bot"
	"github.com/pairbench/pairbench/bot/githubtest"
)

func actionsRequest() bot.Request {
	return bot.Request{
		RunID:   bot.RunID("pr2-" + headSHA + "-0a1b2c3d"),
		Repo:    bot.Repo{Owner: "Codertocat", Name: "Hello-World", DefaultBranch: defaultRef, Installation: installID},
		PR:      prNumber,
		HeadSHA: headSHA,
		Domains: []string{"books.example", "weather.example"},
		Intents: []string{"books-count"},
		Pairs:   12,
	}
}

func TestActionsDispatch(t *testing.T) {
	f := newFixture(t)
	a := bot.NewActions(f.clients, "")
	require.NoError(t, a.Dispatch(context.Background(), actionsRequest()))
	ds := f.gh.Dispatches(repoName)
	require.Len(t, ds, 1)
	assert.Equal(t, "pairbench.yml", ds[0].Workflow)
	assert.Equal(t, defaultRef, ds[0].Ref, "the workflow that runs is the default branch's")
	assert.Equal(t, map[string]any{
		"run_id": "pr2-" + headSHA + "-0a1b2c3d", "pr": "2", "head_sha": headSHA,
		"domains": "books.example,weather.example", "intents": "books-count", "pairs": "12",
	}, ds[0].Inputs)
}

func TestActionsDispatchMissingWorkflow(t *testing.T) {
	f := newFixture(t)
	err := bot.NewActions(f.clients, "nope.yml").Dispatch(context.Background(), actionsRequest())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "nope.yml")
}

func TestWorkflowInputsLimits(t *testing.T) {
	req := actionsRequest()
	in, err := bot.WorkflowInputs(req)
	require.NoError(t, err)
	assert.LessOrEqual(t, len(in), 25)

	for len(strings.Join(req.Intents, ",")) < 65535 {
		req.Intents = append(req.Intents, strings.Repeat("i", 199))
	}
	_, err = bot.WorkflowInputs(req)
	require.ErrorIs(t, err, bot.ErrInputsTooLarge)

	f := newFixture(t)
	require.ErrorIs(t, bot.NewActions(f.clients, "").Dispatch(context.Background(), req), bot.ErrInputsTooLarge)
	assert.Empty(t, f.gh.Calls(), "an oversized request is refused before reaching GitHub")
}

func TestActionsCancel(t *testing.T) {
	f := newFixture(t)
	req := actionsRequest()
	f.gh.Repo(repoName, func(r *githubtest.Repo) {
		r.WorkflowRuns = []githubtest.WorkflowRun{
			{ID: 10, Workflow: "pairbench.yml", DisplayTitle: "pairbench " + string(req.RunID), Status: "in_progress", Event: "workflow_dispatch"},
			{ID: 11, Workflow: "pairbench.yml", DisplayTitle: "pairbench pr2-" + otherSHA + "-00000000", Status: "in_progress", Event: "workflow_dispatch"},
			{ID: 12, Workflow: "pairbench.yml", DisplayTitle: "pairbench " + string(req.RunID), Status: "completed", Conclusion: "success", Event: "workflow_dispatch"},
		}
	})
	a := bot.NewActions(f.clients, "")
	require.NoError(t, a.Cancel(context.Background(), req))
	var cancelled []int64
	f.gh.Repo(repoName, func(r *githubtest.Repo) { cancelled = r.Cancelled })
	assert.Equal(t, []int64{10}, cancelled, "only the request's unfinished run is cancelled")

	// A run not listed yet: nothing to cancel, no error.
	req.RunID = bot.RunID("pr2-" + headSHA + "-ffffffff")
	require.NoError(t, a.Cancel(context.Background(), req))
}

// TestActionsBackendEndToEnd runs the bot with the Actions backend: the
// pull request dispatches the workflow, and the workflow_run event posts
// the verdict the workflow stored.
func TestActionsBackendEndToEnd(t *testing.T) {
	f := newFixture(t)
	b, err := bot.New(bot.Config{Clients: f.clients, Dispatcher: bot.NewActions(f.clients, ""), Store: f.store})
	require.NoError(t, err)
	ctx := context.Background()
	require.NoError(t, b.Handle(ctx, bot.Delivery{Event: "pull_request", InstallationID: installID, Payload: payload(t, "pull_request.opened.json", nil)}))
	ds := f.gh.Dispatches(repoName)
	require.Len(t, ds, 1)
	run := bot.RunID(ds[0].Inputs["run_id"].(string))

	f.storeReport(t, run, "better")
	require.NoError(t, b.Handle(ctx, bot.Delivery{Event: "workflow_run", InstallationID: installID, Payload: workflowRunPayload(t, run, "success")}))
	assert.Equal(t, []string{"bench: better"}, f.gh.IssueLabels(repoName, prNumber))
	assert.Equal(t, "success", f.gh.CheckRuns(repoName)[0].Conclusion)
}
