package bot_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
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

func fork() map[string]any {
	return map[string]any{"pull_request.head.repo.full_name": "stranger/Hello-World", "pull_request.head.repo.fork": true}
}

// TestABenchFromPullRequestToVerdict runs the whole path on both
// databases: the pull request is benched at its head, the check run goes
// queued → in progress → completed, and the verdict is posted once, with a
// report link on the service (no path of the server anywhere).
func TestABenchFromPullRequestToVerdict(t *testing.T) {
	t.Parallel()
	for _, dialect := range statetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			f := newFixtureOn(t, dialect)
			f.opened(t, nil)
			benches := f.benches(t)
			require.Len(t, benches, 1)
			bn := benches[0]
			assert.Equal(t, headSHA, bn.SHA)
			assert.Equal(t, []string{"books.example"}, bn.Domains)
			assert.Equal(t, 20, bn.Pairs)
			assert.Regexp(t, `^pr2-`+headSHA+`-[0-9a-f]{8}$`, bn.Run)
			require.Eventually(t, func() bool { return len(f.runner.Runs()) == 1 }, 10*time.Second, 10*time.Millisecond)
			assert.Equal(t, bot.RunID(bn.Run), f.runner.Runs()[0].RunID)

			f.finishLocal(t, bn.Run, pairbench.Faster)
			runs := f.gh.CheckRuns(repoName)
			require.Equal(t, 1, len(runs), "one check run per bench")
			assert.Equal(t, bn.Run, runs[0].ExternalID)
			assert.Equal(t, "success", runs[0].Conclusion)
			assert.Equal(t, "bench: faster · this PR's tools (ec26c3e) against no tools", runs[0].Title, "the title names the arms")
			assert.Contains(t, runs[0].Summary, "books-newest-by-author")
			// The check run's own short summary; the whole comment in its
			// text; details_url to the report.
			assert.True(t, strings.HasPrefix(runs[0].Summary, "**pairbench verdict: "), runs[0].Summary)
			assert.Less(t, len(runs[0].Summary), 2000, "the summary is short")
			assert.NotContains(t, runs[0].Summary, "<details>")
			assert.Contains(t, runs[0].Text, "<details><summary>Every figure")
			assert.Contains(t, runs[0].Text, "| intent | label | Δ accuracy | speedup | pairs |")
			assert.Regexp(t, `^https://bench\.example\.test/runs/`+bn.Run+`/[0-9a-f]{32}/report\.html$`, runs[0].DetailsURL)
			comments := f.gh.Comments(repoName, prNumber)
			require.Len(t, comments, 1)
			assert.True(t, strings.HasPrefix(comments[0].Body, "<!-- pairbench:rollup -->"))
			assert.Contains(t, comments[0].Body, runs[0].DetailsURL)
			assert.NotContains(t, comments[0].Body, "file://")
			assert.NotContains(t, comments[0].Body, f.store.Root())
			assert.Equal(t, []string{"bench: faster"}, f.gh.IssueLabels(repoName, prNumber))
		})
	}
}

func TestARedeliveryIsBenchedOnce(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	body := payload(t, "pull_request.opened.json", nil)
	d := bot.Delivery{ID: "same", Event: "pull_request", InstallationID: installID, Payload: body}
	ok, err := f.bot.Accept(context.Background(), d)
	require.NoError(t, err)
	require.True(t, ok)
	ok, err = f.bot.Accept(context.Background(), d)
	require.NoError(t, err)
	assert.False(t, ok, "the redelivery is refused")
	f.settle(t)
	// Another delivery about the same commit (a reopen) benches nothing new.
	f.opened(t, map[string]any{"action": "reopened"})
	assert.Len(t, f.benches(t), 1)
	assert.Len(t, f.gh.CheckRuns(repoName), 1)
}

func TestAPushSupersedesAndTheLateVerdictIsIgnored(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.opened(t, nil)
	first := f.benches(t)[0].Run
	f.push(t, otherSHA, nil)
	benches := f.benches(t)
	require.Len(t, benches, 2)
	assert.Equal(t, otherSHA, benches[0].SHA)
	assert.Equal(t, state.BenchCancelled, benches[1].State)
	runs := f.gh.CheckRuns(repoName)
	require.Len(t, runs, 2)
	assert.Equal(t, "cancelled", runs[0].Conclusion)
	assert.Equal(t, "superseded", runs[0].Title)

	// The superseded bench's runner ends anyway: nothing is posted for it.
	f.storeReport(t, bot.RunID(first), pairbench.LessAccurate)
	f.runner.finish(bot.RunID(first), nil)
	f.settle(t)
	assert.Empty(t, f.gh.Comments(repoName, prNumber))
	assert.Empty(t, f.gh.IssueLabels(repoName, prNumber))
}

// TestAVerdictForAnOlderCommitChangesNeitherLabelNorHeadline: the head's
// verdict is "better"; a bench of the older commit (a maintainer's
// /bench run @<sha>) ends later with "less accurate". The label, the
// rollup's headline and the head's check run stay; the old verdict goes into
// the earlier commits.
func TestAVerdictForAnOlderCommitChangesNeitherLabelNorHeadline(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.opened(t, nil)
	f.push(t, otherSHA, nil)
	head := f.benches(t)[0].Run
	f.finishLocal(t, head, pairbench.Better)
	f.comment(t, writer, "/bench run @"+headSHA)
	old := f.benches(t)[0]
	require.Equal(t, headSHA, old.SHA)
	f.finishLocal(t, old.Run, pairbench.LessAccurate)

	assert.Equal(t, []string{"bench: better"}, f.gh.IssueLabels(repoName, prNumber))
	var sticky githubtest.Comment
	for _, c := range f.gh.Comments(repoName, prNumber) {
		if strings.HasPrefix(c.Body, "<!-- pairbench:rollup -->") {
			sticky = c
		}
	}
	assert.Contains(t, sticky.Body, "### pairbench: 1111111 (run `"+head+"`)")
	assert.Contains(t, sticky.Body, "| ec26c3e | less accurate |")
	for _, cr := range f.gh.CheckRuns(repoName) {
		if cr.ExternalID == head {
			assert.Equal(t, "bench: better · this PR's tools (1111111) against no tools", cr.Title, "the head's check run is its own bench's")
		}
	}
}

func TestStatusCancelAndSupersedeSurviveARestart(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.opened(t, nil)
	run := f.benches(t)[0].Run
	f.restart(t)

	f.comment(t, writer, "/bench status")
	comments := f.gh.Comments(repoName, prNumber)
	require.NotEmpty(t, comments)
	assert.Contains(t, comments[len(comments)-1].Body, "Run `"+run+"` is benching ec26c3e")

	f.restart(t)
	f.push(t, otherSHA, nil)
	benches := f.benches(t)
	require.Len(t, benches, 2)
	assert.Equal(t, state.BenchCancelled, benches[1].State, "the push superseded the bench from before the restart")

	f.restart(t)
	f.comment(t, writer, "/bench cancel")
	comments = f.gh.Comments(repoName, prNumber)
	assert.Contains(t, comments[len(comments)-1].Body, "Cancelled run `"+benches[0].Run+"`")
	for _, cr := range f.gh.CheckRuns(repoName) {
		assert.Equal(t, "completed", cr.Status, "no check run is left queued")
	}
}

// TestALocalBenchResumesByItsRunIDAfterAShutdown: a shutdown puts the
// running bench back in the queue; the next start runs the same run id.
func TestALocalBenchResumesByItsRunIDAfterAShutdown(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.opened(t, nil)
	run := f.benches(t)[0].Run
	require.Eventually(t, func() bool { return len(f.runner.Runs()) == 1 }, 10*time.Second, 10*time.Millisecond)
	f.restart(t)
	require.Eventually(t, func() bool { return len(f.runner.Runs()) == 2 }, 10*time.Second, 10*time.Millisecond, "the bench runs again")
	assert.Equal(t, bot.RunID(run), f.runner.Runs()[1].RunID, "with its run id")
	assert.Equal(t, state.BenchRunning, f.benches(t)[0].State, "not failed by the shutdown")
	f.finishLocal(t, run, pairbench.Better)
	assert.Len(t, f.gh.CheckRuns(repoName), 1)
	assert.Equal(t, "success", f.gh.CheckRuns(repoName)[0].Conclusion)
}

func TestCloseCancelsAndAReopenReusesTheVerdict(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.opened(t, nil)
	f.opened(t, map[string]any{"action": "closed", "pull_request.state": "closed", "pull_request.merged": true})
	bn := f.benches(t)[0]
	assert.Equal(t, state.BenchCancelled, bn.State)
	assert.Equal(t, "The pull request was merged.", bn.Reason)

	f.opened(t, map[string]any{"action": "reopened"})
	require.Len(t, f.benches(t), 2, "the cancelled bench had no verdict: a reopen benches again")
	run := f.benches(t)[0].Run
	f.finishLocal(t, run, pairbench.Better)
	f.opened(t, map[string]any{"action": "closed", "pull_request.state": "closed"})
	f.opened(t, map[string]any{"action": "reopened"})
	assert.Len(t, f.benches(t), 2, "a reopen of a benched commit reuses its verdict")
	assert.Equal(t, []string{"bench: better"}, f.gh.IssueLabels(repoName, prNumber))
}

func TestForkReRunsFindTheirPullRequest(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.opened(t, fork())
	f.comment(t, writer, "/bench run")
	run := f.benches(t)[0].Run
	f.finishLocal(t, run, pairbench.Better)

	// Re-run on a fork's check run: GitHub lists no pull request.
	rerun := map[string]any{
		"action":    "rerequested",
		"check_run": map[string]any{"name": "pairbench", "head_sha": headSHA, "external_id": run, "pull_requests": []any{}},
		"repository": map[string]any{"name": "Hello-World", "full_name": repoName, "owner": map[string]any{"login": "Codertocat"},
			"default_branch": "master"},
		"sender": map[string]any{"login": writer}, "installation": map[string]any{"id": installID},
	}
	f.deliver(t, "check_run", mustJSON(t, rerun))
	require.Len(t, f.benches(t), 2, "Re-run benches the commit again")
	f.finishLocal(t, f.benches(t)[0].Run, pairbench.Faster)

	// Re-run all checks: a check_suite event, again without pull requests.
	suite := map[string]any{
		"action":      "rerequested",
		"check_suite": map[string]any{"head_sha": headSHA, "pull_requests": []any{}},
		"repository":  rerun["repository"], "sender": rerun["sender"], "installation": rerun["installation"],
	}
	f.deliver(t, "check_suite", mustJSON(t, suite))
	assert.Len(t, f.benches(t), 3)

	// Someone without write access presses it: nothing.
	suite["sender"] = map[string]any{"login": stranger}
	f.deliver(t, "check_suite", mustJSON(t, suite))
	assert.Len(t, f.benches(t), 3)
}

func TestApprovalIsOneCommentEditedAsTheHeadMoves(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.opened(t, fork())
	assert.Empty(t, f.benches(t), "an untrusted pull request never runs on its own")
	for _, sha := range []string{otherSHA, headSHA, otherSHA} {
		f.push(t, sha, fork())
	}
	comments := f.gh.Comments(repoName, prNumber)
	require.Len(t, comments, 1, "one approval request for open and three pushes")
	assert.Contains(t, comments[0].Body, "review commit `"+otherSHA+"`")

	f.comment(t, writer, "/bench run")
	require.Len(t, f.benches(t), 1)
	assert.Equal(t, otherSHA, f.benches(t)[0].SHA)
	// The approval covers that commit only.
	f.push(t, headSHA, fork())
	assert.Equal(t, state.BenchCancelled, f.benches(t)[0].State)
	assert.Contains(t, f.gh.Comments(repoName, prNumber)[0].Body, "review commit `"+headSHA+"`")
}

// TestRunRefusesAHeadThatMovedAfterTheComment: the maintainer reviewed
// and commented, then a push landed before the comment was processed. The
// bot refuses rather than bench a commit nobody reviewed; /bench run @<sha>
// binds the commit explicitly.
func TestRunRefusesAHeadThatMovedAfterTheComment(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.opened(t, fork())
	written := time.Now()
	time.Sleep(1100 * time.Millisecond) // updated_at has second precision
	f.push(t, otherSHA, fork())
	f.deliver(t, "issue_comment", commentPayload(t, writer, "/bench run", written))
	assert.Empty(t, f.benches(t))
	comments := f.gh.Comments(repoName, prNumber)
	assert.Contains(t, comments[len(comments)-1].Body, "the head moved to `1111111` after your comment")

	// The push not yet seen by the bot: refused too.
	f.gh.Repo(repoName, func(r *githubtest.Repo) { r.Pulls[prNumber].HeadSHA = headSHA })
	f.comment(t, writer, "/bench run")
	assert.Empty(t, f.benches(t))

	f.comment(t, writer, "/bench run @"+headSHA[:10])
	require.Len(t, f.benches(t), 1)
	assert.Equal(t, headSHA, f.benches(t)[0].SHA)
}

func TestCommandsInCodeQuotesAndCommentsAreNotRun(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	for _, body := range []string{
		"Try:\n```\n/bench run\n```",
		"~~~md\n/bench run\n~~~",
		"Indented:\n\n    /bench run",
		"> /bench run\n\nwhat does this do?",
		"<!-- /bench run -->",
		"<!--\n/bench run\n-->",
		"`/bench run`",
	} {
		f.comment(t, writer, body)
	}
	assert.Empty(t, f.benches(t))
	assert.Empty(t, f.gh.Comments(repoName, prNumber))
	f.comment(t, writer, "```\nnot this\n```\n/bench run")
	assert.Len(t, f.benches(t), 1, "a command after a closed fence is a command")
}

func TestOutsidersGetOneReply(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	for range 10 {
		f.comment(t, stranger, "/bench run")
	}
	comments := f.gh.Comments(repoName, prNumber)
	require.Len(t, comments, 1, "10 commands, one reply")
	assert.Contains(t, comments[0].Body, "Sorry @passer-by")
	assert.Empty(t, f.benches(t))
	for range 15 {
		f.comment(t, writer, "/bench help")
	}
	assert.Len(t, f.gh.Comments(repoName, prNumber), 11, "at most 10 replies an hour on a pull request")
}

// TestOutsidersNeverSilenceMaintainers: ten outsiders each get their
// refusal; the maintainer's command is still answered. The refusals used
// to spend the pull request's hourly replies.
func TestOutsidersNeverSilenceMaintainers(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	for i := range 12 {
		f.comment(t, fmt.Sprintf("outsider-%d", i), "/bench run")
	}
	require.Len(t, f.gh.Comments(repoName, prNumber), 10, "at most 10 refusals an hour")
	f.comment(t, writer, "/bench status")
	comments := f.gh.Comments(repoName, prNumber)
	require.Len(t, comments, 11)
	assert.Contains(t, comments[10].Body, "No bench is running")
}

func TestUsageDoesNotParseAsACommand(t *testing.T) {
	t.Parallel()
	assert.True(t, bot.ParseComment(bot.Usage).Ignored(), "the usage shows commands in a code block")
}

// TestTokenMode runs the bot with a personal access token: commit statuses
// instead of check runs (which the fake, as GitHub, refuses to a token),
// the rollup found again among the token user's comments, and the user's
// own comments (such as a usage reply) never read as commands.
func TestTokenMode(t *testing.T) {
	t.Parallel()
	f := newFixture(t, func(c *bot.Config) {})
	f.stop(t)
	f.gh.AddUserToken("ghp_service", githubtest.User{Login: "bench-bot", Type: "User"})
	clients, err := bot.NewTokenClients("ghp_service", f.gh.URL, nil)
	require.NoError(t, err)
	f.cfg.Clients, f.cfg.CommitStatuses = clients, true
	f.start(t)

	f.opened(t, nil)
	run := f.benches(t)[0].Run
	f.finishLocal(t, run, pairbench.Better)
	assert.Empty(t, f.gh.CheckRuns(repoName))
	st := f.gh.Statuses(repoName, headSHA)
	require.NotEmpty(t, st)
	last := st[len(st)-1]
	assert.Equal(t, "success", last.State)
	assert.Equal(t, "pairbench", last.Context)
	assert.Equal(t, "bench: better · this PR's tools (ec26c3e) against no tools", last.Description)

	// The bot's user comments /bench help: the reply is not a command.
	f.comment(t, "bench-bot", "/bench run")
	assert.Len(t, f.benches(t), 1, "its own comments are not commands")
	f.comment(t, writer, "/bench help")
	n := len(f.gh.Comments(repoName, prNumber))
	last2 := f.gh.Comments(repoName, prNumber)[n-1]
	assert.Equal(t, "bench-bot", last2.User)
	f.deliver(t, "issue_comment", commentPayload(t, "bench-bot", last2.Body, time.Now()))
	assert.Len(t, f.gh.Comments(repoName, prNumber), n, "no answer to its own reply")

	// A second verdict edits the same rollup.
	f.push(t, otherSHA, nil)
	f.finishLocal(t, f.benches(t)[0].Run, pairbench.Slower)
	rollups := 0
	for _, c := range f.gh.Comments(repoName, prNumber) {
		if strings.HasPrefix(c.Body, "<!-- pairbench:rollup -->") {
			rollups++
		}
	}
	assert.Equal(t, 1, rollups)
}

// forge returns a signature that differs from sig in its first hex digit,
// whatever that digit is (overwriting it with a fixed one left the real
// signature whenever it began so).
func forge(sig string) string {
	flipped := "1"
	if sig[0] == '1' {
		flipped = "2"
	}
	return flipped + sig[1:]
}

func TestReportLinksCheckAndServe(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.opened(t, nil)
	run := f.benches(t)[0].Run
	f.finishLocal(t, run, pairbench.Better)
	body := f.gh.Comments(repoName, prNumber)[0].Body
	i := strings.Index(body, "https://bench.example.test/runs/")
	require.Positive(t, i)
	link := body[i:]
	link = link[:strings.IndexAny(link, ")> \n")]
	h := f.bot.ReportHandler()
	get := func(u string) *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, strings.TrimPrefix(u, "https://bench.example.test"), nil))
		return w
	}
	w := get(link)
	assert.Equal(t, http.StatusOK, w.Code, w.Body.String())
	assert.Equal(t, "<html></html>", w.Body.String(), "the service serves the report from the store")
	assert.Contains(t, w.Header().Get("Content-Security-Policy"), "default-src 'none'")
	sig := strings.Split(strings.TrimPrefix(link, "https://bench.example.test/runs/"+run+"/"), "/")[0]
	require.NotEqual(t, sig, forge(sig))
	assert.Equal(t, http.StatusForbidden, get(strings.Replace(link, sig, forge(sig), 1)).Code)
	other := strings.Replace(link, run, "pr2-"+headSHA+"-00000000", 1)
	assert.Equal(t, http.StatusForbidden, get(other).Code, "a signature is good for its run only")

	// A store with only the Markdown report: report.md, as plain text.
	require.NoError(t, f.store.Delete(t.Context(), run+"/report.html"))
	require.NoError(t, f.store.Put(t.Context(), run+"/report.md", strings.NewReader("# the report")))
	w = get(link)
	assert.Equal(t, http.StatusOK, w.Code)
	assert.Equal(t, "# the report", w.Body.String())
	assert.Equal(t, "text/plain; charset=utf-8", w.Header().Get("Content-Type"))
}

func TestActionsBenchAcceptsOnlyTheRunItDispatched(t *testing.T) {
	t.Parallel()
	f := newFixture(t, actions)
	f.opened(t, nil)
	bn := f.benches(t)[0]
	require.NotZero(t, bn.WorkflowRunID, "the dispatch recorded GitHub's run id")
	ds := f.gh.Dispatches(repoName)
	require.Len(t, ds, 1)
	assert.Equal(t, defaultRef, ds[0].Ref, "the workflow that runs is the default branch's")
	assert.Equal(t, bn.Run, ds[0].Inputs["run_id"])
	f.storeReport(t, bot.RunID(bn.Run), pairbench.Better)

	// Forgeries, each titled with the public run id: a fork's pull_request
	// run, a run in another repository, a run the service never dispatched.
	forged := []map[string]any{
		{"workflow_run.event": "pull_request", "workflow_run.id": bn.WorkflowRunID},
		{"workflow_run.head_repository.full_name": "stranger/Hello-World", "workflow_run.id": bn.WorkflowRunID},
		{"workflow_run.id": 987654321},
	}
	for _, edits := range forged {
		p := workflowRunPayload(t, bn.WorkflowRunID, bn.Run, "failure")
		f.deliver(t, "workflow_run", withEdits(t, p, edits))
	}
	assert.Equal(t, state.BenchRunning, f.benches(t)[0].State, "no forged run ended the bench")
	f.completeWorkflow(t, bn.Run, "success")
	assert.Equal(t, state.BenchDone, f.benches(t)[0].State)
	assert.Equal(t, []string{"bench: better"}, f.gh.IssueLabels(repoName, prNumber))
}

// TestAWorkflowRunThatEndsBeforeItsDispatchIsRecorded: GitHub creates the
// dispatched run and answers with its id, but the answer reaches the
// dispatch job only after the run has completed and its workflow_run
// delivery has been handled (a fast run, a loaded replica). The run's title
// names the bench, so the delivery records the run and ends the bench (runs
// of the same title the service did not dispatch do not); the
// dispatch, recording afterwards, changes nothing: one dispatch, one check
// run, completed with the verdict, and the verdict's label.
func TestAWorkflowRunThatEndsBeforeItsDispatchIsRecorded(t *testing.T) {
	t.Parallel()
	for _, dialect := range statetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			f := newFixtureOn(t, dialect, actions)
			release := f.holdAnswers(t, func(r *http.Request) bool {
				return r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/dispatches")
			})
			f.accept(t, "pull_request", payload(t, "pull_request.opened.json", nil))
			var ds []githubtest.Dispatch
			require.Eventually(t, func() bool {
				ds = f.gh.Dispatches(repoName)
				return len(ds) == 1
			}, 30*time.Second, 10*time.Millisecond, "the bench was not dispatched")
			run := ds[0].Inputs["run_id"].(string)
			bn := f.benches(t)[0]
			require.Equal(t, run, bn.Run)
			require.Zero(t, bn.WorkflowRunID, "the dispatch has not recorded its run yet")

			f.storeReport(t, bot.RunID(run), pairbench.Better)
			// Runs titled with the bench's public run id that the service did
			// not dispatch: a fork's pull_request run, another repository's.
			for _, edits := range []map[string]any{
				{"workflow_run.event": "pull_request"},
				{"workflow_run.head_repository.full_name": "stranger/Hello-World"},
			} {
				f.waitHandled(t, f.accept(t, "workflow_run", withEdits(t, workflowRunPayload(t, 987654321, run, "failure"), edits)))
			}
			require.False(t, f.benches(t)[0].Over(), "no forged run ended the bench")

			require.True(t, f.gh.CompleteWorkflowRun(repoName, ds[0].RunID, "success"))
			f.waitHandled(t, f.accept(t, "workflow_run", workflowRunPayload(t, ds[0].RunID, run, "success")))
			release()
			f.settle(t)

			bn = f.benches(t)[0]
			assert.Equal(t, state.BenchDone, bn.State, "the run's end was not lost")
			assert.Equal(t, ds[0].RunID, bn.WorkflowRunID)
			var checks []string
			for _, cr := range f.gh.CheckRuns(repoName) {
				checks = append(checks, cr.ExternalID+" "+cr.Status+" "+cr.Conclusion)
			}
			assert.Equal(t, []string{run + " completed success"}, checks, "one check run, completed")
			assert.Len(t, f.gh.Dispatches(repoName), 1, "dispatched once")
			assert.Equal(t, []string{"bench: better"}, f.gh.IssueLabels(repoName, prNumber))
		})
	}
}

func TestActionsCancelStopsTheRecordedRun(t *testing.T) {
	t.Parallel()
	f := newFixture(t, actions)
	f.opened(t, nil)
	wf := f.benches(t)[0].WorkflowRunID
	f.push(t, otherSHA, nil)
	var cancelled []int64
	f.gh.Repo(repoName, func(r *githubtest.Repo) { cancelled = r.Cancelled })
	assert.Equal(t, []int64{wf}, cancelled)
	assert.Len(t, f.gh.Dispatches(repoName), 2)
}

func TestADispatchGitHubRefusesFailsTheBench(t *testing.T) {
	t.Parallel()
	f := newFixture(t, actions, func(c *bot.Config) { c.Workflow = "nope.yml" })
	f.opened(t, nil)
	bn := f.benches(t)[0]
	assert.Equal(t, state.BenchFailed, bn.State)
	assert.Contains(t, bn.Reason, "could not be started")
	assert.Equal(t, "failure", f.gh.CheckRuns(repoName)[0].Conclusion)
}

// TestRunWithAnAgent: /bench run --agent reaches the backend through the
// service's state, across a restart, for the local backend (its Request)
// and for Actions (the workflow_dispatch input), and /bench status names it.
func TestRunWithAnAgent(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.opened(t, nil)
	f.comment(t, writer, "/bench run --agent claude-code")
	bn := f.benches(t)[0]
	assert.Equal(t, "claude-code", bn.Agent)
	f.restart(t)
	f.comment(t, writer, "/bench status")
	comments := f.gh.Comments(repoName, prNumber)
	assert.Contains(t, comments[len(comments)-1].Body, "agent `claude-code`")
	require.Eventually(t, func() bool {
		for _, r := range f.runner.Runs() {
			if r.RunID == bot.RunID(bn.Run) {
				return true
			}
		}
		return false
	}, 10*time.Second, 10*time.Millisecond)
	for _, r := range f.runner.Runs() {
		if r.RunID == bot.RunID(bn.Run) {
			assert.Equal(t, "claude-code", r.Agent)
		}
	}

	a := newFixture(t, actions)
	a.opened(t, nil)
	a.comment(t, writer, "/bench run --agent codex")
	ds := a.gh.Dispatches(repoName)
	require.Len(t, ds, 2)
	assert.Nil(t, ds[0].Inputs["agent"], "no agent input unless one is asked for")
	assert.Equal(t, "codex", ds[1].Inputs["agent"])
}

// TestForgeAlwaysForges: forge never returns the signature it is given,
// whichever digit starts it (the old forgery, "00" over the first two
// digits, did for one signature in 256).
func TestForgeAlwaysForges(t *testing.T) {
	t.Parallel()
	for _, c := range "0123456789abcdef" {
		sig := string(c) + "0f3a"
		assert.NotEqual(t, sig, forge(sig))
		assert.Len(t, forge(sig), len(sig))
	}
}
