package bot_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/bot"
	"github.com/pairbench/pairbench/bot/githubtest"
)

func TestPullRequestOpenedDispatchesPinnedBench(t *testing.T) {
	f := newFixture(t)
	require.NoError(t, f.opened(t, nil))

	reqs := f.disp.Dispatched()
	require.Len(t, reqs, 1)
	req := reqs[0]
	assert.Equal(t, headSHA, req.HeadSHA)
	assert.Equal(t, prNumber, req.PR)
	assert.Equal(t, []string{"books.example"}, req.Domains, "weather.example has no intents and was not changed")
	assert.Empty(t, req.Intents, "an automatic bench covers every intent of its domains")
	assert.Equal(t, 20, req.Pairs)
	assert.Equal(t, bot.Repo{Owner: "Codertocat", Name: "Hello-World", DefaultBranch: "master", Installation: installID}, req.Repo)
	assert.Regexp(t, `^pr2-`+headSHA+`-[0-9a-f]{8}$`, string(req.RunID))

	runs := f.gh.CheckRuns(repoName)
	require.Len(t, runs, 1)
	assert.Equal(t, "pairbench", runs[0].Name)
	assert.Equal(t, headSHA, runs[0].HeadSHA)
	assert.Equal(t, "queued", runs[0].Status)
	assert.Equal(t, string(req.RunID), runs[0].ExternalID)
	assert.Contains(t, runs[0].Summary, "`books.example`")
	assert.Empty(t, f.gh.Comments(repoName, prNumber), "an automatic bench posts nothing until it ends")
}

func TestPullRequestWithoutConfigDoesNothing(t *testing.T) {
	f := newFixture(t)
	f.gh.Repo(repoName, func(r *githubtest.Repo) {
		files := map[string]string{}
		for k, v := range registryFiles {
			if k != ".pairbench.yml" {
				files[k] = v
			}
		}
		r.Files[headSHA] = files
	})
	require.NoError(t, f.opened(t, nil))
	assert.Empty(t, f.disp.Dispatched())
	assert.Equal(t, []string{"pulls/list-files", "repos/get-content"}, f.operations(), "only reads, and nothing written")
}

func TestPullRequestTouchingNoDomainDoesNothing(t *testing.T) {
	f := newFixture(t)
	f.gh.Repo(repoName, func(r *githubtest.Repo) {
		r.Pulls[prNumber].Files = []string{"README.md", "domains/weather.example/domain.json"}
	})
	require.NoError(t, f.opened(t, nil))
	assert.Empty(t, f.disp.Dispatched(), "weather.example changed but has no intents")
	assert.Empty(t, f.gh.CheckRuns(repoName))
}

func TestPullRequestConfigGlobsMapFilesToDomains(t *testing.T) {
	f := newFixture(t)
	f.gh.Repo(repoName, func(r *githubtest.Repo) {
		files := map[string]string{}
		for k, v := range registryFiles {
			files[k] = v
		}
		files[".pairbench.yml"] = "domains:\n  books.example: [\"shared/**/*.js\"]\n"
		r.Files[headSHA] = files
		r.Pulls[prNumber].Files = []string{"shared/lib/util.js"}
	})
	require.NoError(t, f.opened(t, nil))
	reqs := f.disp.Dispatched()
	require.Len(t, reqs, 1)
	assert.Equal(t, []string{"books.example"}, reqs[0].Domains)
}

func TestPullRequestManyFilesArePaginated(t *testing.T) {
	f := newFixture(t)
	f.gh.Repo(repoName, func(r *githubtest.Repo) {
		files := make([]string, 0, 301)
		for i := range 300 {
			files = append(files, "docs/page"+strings.Repeat("x", i%7)+".md")
		}
		r.Pulls[prNumber].Files = append(files, "bench/intents/books.example/books-count.yml")
	})
	require.NoError(t, f.opened(t, nil))
	require.Len(t, f.disp.Dispatched(), 1, "the domain file is on the last page")
	assert.Len(t, f.gh.CallsTo("pulls/list-files"), 4)
}

func TestDraftWaits(t *testing.T) {
	f := newFixture(t)
	require.NoError(t, f.opened(t, map[string]any{"pull_request.draft": true}))
	assert.Empty(t, f.gh.Calls(), "a draft is not even read")
	assert.Empty(t, f.disp.Dispatched())

	require.NoError(t, f.deliver(t, "pull_request", payload(t, "pull_request.ready_for_review.json", nil)))
	assert.Len(t, f.disp.Dispatched(), 1, "ready for review starts the bench")
}

func TestIgnoredPullRequestActions(t *testing.T) {
	f := newFixture(t)
	require.NoError(t, f.opened(t, map[string]any{"action": "labeled"}))
	require.NoError(t, f.opened(t, map[string]any{"state": "closed", "pull_request.state": "closed"}))
	assert.Empty(t, f.gh.Calls())
}

func TestUntrustedPullRequestsAskForApproval(t *testing.T) {
	cases := map[string]map[string]any{
		"fork": {
			"pull_request.head.repo.full_name": "stranger/Hello-World",
			"pull_request.head.repo.fork":      true,
		},
		"first-time contributor": {"pull_request.author_association": "FIRST_TIME_CONTRIBUTOR"},
		"no association":         {"pull_request.author_association": "NONE"},
	}
	for name, edits := range cases {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			require.NoError(t, f.opened(t, edits))
			assert.Empty(t, f.disp.Dispatched(), "an untrusted pull request never runs on its own")
			assert.Empty(t, f.gh.CheckRuns(repoName))
			comments := f.gh.Comments(repoName, prNumber)
			require.Len(t, comments, 1)
			assert.Contains(t, comments[0].Body, "/bench run")
			assert.Contains(t, comments[0].Body, "`ec26c3e`", "the approval names the commit it covers")
		})
	}
}

func TestApprovalIsBoundToTheHeadCommit(t *testing.T) {
	f := newFixture(t)
	fork := map[string]any{"pull_request.head.repo.full_name": "stranger/Hello-World", "pull_request.head.repo.fork": true}
	require.NoError(t, f.opened(t, fork))
	require.NoError(t, f.comment(t, writer, "/bench run"))
	reqs := f.disp.Dispatched()
	require.Len(t, reqs, 1)
	assert.Equal(t, headSHA, reqs[0].HeadSHA)

	// A new push: not run, the approved bench is superseded, and a new
	// approval is asked for.
	f.gh.Repo(repoName, func(r *githubtest.Repo) {
		r.Files[otherSHA] = registryFiles
		r.Pulls[prNumber].HeadSHA = otherSHA
	})
	sync := fork
	sync["pull_request.head.sha"] = otherSHA
	require.NoError(t, f.deliver(t, "pull_request", payload(t, "pull_request.synchronize.json", sync)))
	assert.Len(t, f.disp.Dispatched(), 1, "the new commit is not benched without a new approval")
	cancelled := f.disp.Cancelled()
	require.Len(t, cancelled, 1)
	assert.Equal(t, reqs[0].RunID, cancelled[0].RunID)
	comments := f.gh.Comments(repoName, prNumber)
	assert.Contains(t, comments[len(comments)-1].Body, "`1111111`")
}

func TestPushSupersedesRunningBench(t *testing.T) {
	f := newFixture(t)
	require.NoError(t, f.opened(t, nil))
	first := f.disp.Dispatched()[0]

	require.NoError(t, f.opened(t, map[string]any{"action": "reopened"}))
	assert.Len(t, f.disp.Dispatched(), 1, "the same commit is not benched twice")

	f.gh.Repo(repoName, func(r *githubtest.Repo) { r.Files[otherSHA] = registryFiles })
	require.NoError(t, f.deliver(t, "pull_request", payload(t, "pull_request.synchronize.json", map[string]any{"pull_request.head.sha": otherSHA})))
	reqs := f.disp.Dispatched()
	require.Len(t, reqs, 2)
	assert.Equal(t, otherSHA, reqs[1].HeadSHA)
	require.Len(t, f.disp.Cancelled(), 1)
	assert.Equal(t, first.RunID, f.disp.Cancelled()[0].RunID)

	runs := f.gh.CheckRuns(repoName)
	require.Len(t, runs, 2)
	assert.Equal(t, "cancelled", runs[0].Conclusion)
	assert.Equal(t, "superseded", runs[0].Title)
	assert.Contains(t, runs[0].Summary, "superseded this bench")
	assert.Equal(t, "queued", runs[1].Status)

	// The superseded run's late end is ignored.
	f.storeReport(t, first.RunID, pairbench.Better)
	require.NoError(t, f.bot.Finished(context.Background(), first.RunID, nil))
	assert.Empty(t, f.gh.Comments(repoName, prNumber))
}

func TestCommandFromNonCollaboratorGetsPoliteReplyOnly(t *testing.T) {
	f := newFixture(t)
	require.NoError(t, f.comment(t, stranger, "/bench run"))
	assert.Empty(t, f.disp.Dispatched())
	comments := f.gh.Comments(repoName, prNumber)
	require.Len(t, comments, 1)
	assert.Contains(t, comments[0].Body, "Sorry @passer-by, only people with write access")
	assert.Equal(t, []string{"repos/get-collaborator-permission-level", "issues/create-comment"}, f.operations())
}

func TestUnknownCommandGetsHelp(t *testing.T) {
	f := newFixture(t)
	require.NoError(t, f.comment(t, writer, "/bench frobnicate"))
	comments := f.gh.Comments(repoName, prNumber)
	require.Len(t, comments, 1)
	assert.Contains(t, comments[0].Body, "I do not know `/bench frobnicate`")
	assert.Contains(t, comments[0].Body, bot.Usage)
	assert.Empty(t, f.disp.Dispatched())
}

func TestCommentsNotForTheBotAreIgnored(t *testing.T) {
	f := newFixture(t)
	require.NoError(t, f.comment(t, writer, "nice work"))
	// A comment on an issue, not a pull request.
	require.NoError(t, f.deliver(t, "issue_comment", payload(t, "issue_comment.created.json", map[string]any{"comment.body": "/bench run"})))
	// The bot's own comments.
	require.NoError(t, f.deliver(t, "issue_comment", payload(t, "issue_comment.created.json", map[string]any{
		"issue.pull_request": map[string]any{"url": "x"}, "comment.body": "/bench run", "comment.user.type": "Bot",
	})))
	assert.Empty(t, f.gh.Calls())
}

func TestRunCommand(t *testing.T) {
	f := newFixture(t)
	require.NoError(t, f.comment(t, writer, "/bench run books-count --pairs 7 --model m1"))
	reqs := f.disp.Dispatched()
	require.Len(t, reqs, 1)
	assert.Equal(t, []string{"books.example"}, reqs[0].Domains)
	assert.Equal(t, []string{"books-count"}, reqs[0].Intents)
	assert.Equal(t, 7, reqs[0].Pairs)
	assert.Equal(t, "m1", reqs[0].Model)
	assert.Equal(t, headSHA, reqs[0].HeadSHA)

	comments := f.gh.Comments(repoName, prNumber)
	require.Len(t, comments, 1)
	assert.Contains(t, comments[0].Body, "@maintainer: benching `ec26c3e`")
	var reacted bool
	f.gh.Repo(repoName, func(r *githubtest.Repo) { reacted = len(r.Reactions) == 1 && r.Reactions[0].Content == "eyes" })
	assert.True(t, reacted, "the command is acknowledged with a reaction")
}

func TestRunCommandUnknownIntent(t *testing.T) {
	f := newFixture(t)
	require.NoError(t, f.comment(t, writer, "/bench run books-count nope"))
	assert.Empty(t, f.disp.Dispatched())
	comments := f.gh.Comments(repoName, prNumber)
	require.Len(t, comments, 1)
	assert.Contains(t, comments[0].Body, "has no intent `nope`")
}

func TestRunCommandWithoutConfig(t *testing.T) {
	f := newFixture(t)
	f.gh.Repo(repoName, func(r *githubtest.Repo) { r.Files[headSHA] = map[string]string{"README.md": "hi"} })
	require.NoError(t, f.comment(t, writer, "/bench run"))
	assert.Empty(t, f.disp.Dispatched())
	comments := f.gh.Comments(repoName, prNumber)
	require.Len(t, comments, 1)
	assert.Contains(t, comments[0].Body, "no `.pairbench.yml`")
}

func TestStatusAndCancel(t *testing.T) {
	f := newFixture(t)
	require.NoError(t, f.comment(t, writer, "/bench status"))
	require.NoError(t, f.comment(t, writer, "/bench cancel"))
	comments := f.gh.Comments(repoName, prNumber)
	require.Len(t, comments, 2)
	assert.Contains(t, comments[0].Body, "No bench is running")
	assert.Contains(t, comments[1].Body, "No bench is running")

	require.NoError(t, f.opened(t, nil))
	run := f.disp.Dispatched()[0].RunID
	f.clock.Advance(90 * time.Second)
	require.NoError(t, f.bot.Progress(context.Background(), run, 3, 40))
	require.NoError(t, f.comment(t, writer, "/bench status"))
	comments = f.gh.Comments(repoName, prNumber)
	assert.Contains(t, comments[len(comments)-1].Body, "3 of 40 pairs done")
	assert.Contains(t, comments[len(comments)-1].Body, "Started 1m30s ago")

	require.NoError(t, f.comment(t, writer, "/bench cancel"))
	require.Len(t, f.disp.Cancelled(), 1)
	assert.Equal(t, run, f.disp.Cancelled()[0].RunID)
	runs := f.gh.CheckRuns(repoName)
	assert.Equal(t, "cancelled", runs[0].Conclusion)
	assert.Contains(t, runs[0].Summary, "@maintainer cancelled this bench")
	comments = f.gh.Comments(repoName, prNumber)
	assert.Contains(t, comments[len(comments)-1].Body, "Cancelled run `"+string(run)+"`")
}

func TestProgressIsThrottled(t *testing.T) {
	f := newFixture(t)
	require.NoError(t, f.opened(t, nil))
	run := f.disp.Dispatched()[0].RunID
	ctx := context.Background()
	require.NoError(t, f.bot.Progress(ctx, run, 1, 10))
	require.NoError(t, f.bot.Progress(ctx, run, 2, 10)) // within 10 s: not written
	f.clock.Advance(11 * time.Second)
	require.NoError(t, f.bot.Progress(ctx, run, 3, 10))
	require.NoError(t, f.bot.Progress(ctx, run, 10, 10)) // the last pair always is
	runs := f.gh.CheckRuns(repoName)
	assert.Equal(t, 3, runs[0].Updates)
	assert.Equal(t, "in_progress", runs[0].Status)
	assert.Equal(t, "10 of 10 pairs done", runs[0].Title)

	assert.ErrorIs(t, f.bot.Progress(ctx, "pr1-nope", 1, 2), bot.ErrUnknownRun)
}

func TestFinishedPostsVerdict(t *testing.T) {
	f := newFixture(t)
	require.NoError(t, f.opened(t, nil))
	run := f.disp.Dispatched()[0].RunID
	f.storeReport(t, run, pairbench.Faster)
	require.NoError(t, f.bot.Finished(context.Background(), run, nil))

	runs := f.gh.CheckRuns(repoName)
	require.Len(t, runs, 1)
	assert.Equal(t, "completed", runs[0].Status)
	assert.Equal(t, "success", runs[0].Conclusion)
	assert.Equal(t, "bench: faster", runs[0].Title)
	assert.Contains(t, runs[0].Summary, "books-newest-by-author")

	comments := f.gh.Comments(repoName, prNumber)
	require.Len(t, comments, 1)
	assert.True(t, strings.HasPrefix(comments[0].Body, "<!-- pairbench:rollup -->"))
	assert.Contains(t, comments[0].Body, "file://", "the full report is linked")
	assert.Equal(t, []string{"bench: faster"}, f.gh.IssueLabels(repoName, prNumber))

	// Finished twice: the second is ignored.
	require.NoError(t, f.bot.Finished(context.Background(), run, nil))
	assert.Len(t, f.gh.Comments(repoName, prNumber), 1)
}

func TestFailedOrVanishedRunPostsFailure(t *testing.T) {
	t.Run("run error", func(t *testing.T) {
		f := newFixture(t)
		require.NoError(t, f.opened(t, nil))
		run := f.disp.Dispatched()[0].RunID
		require.NoError(t, f.bot.Finished(context.Background(), run, errBoom))
		assertFailurePosted(t, f, "The run failed: boom")
	})
	t.Run("no report", func(t *testing.T) {
		f := newFixture(t)
		require.NoError(t, f.opened(t, nil))
		require.NoError(t, f.bot.Finished(context.Background(), f.disp.Dispatched()[0].RunID, nil))
		assertFailurePosted(t, f, "without a readable report")
	})
	t.Run("vanished", func(t *testing.T) {
		f := newFixture(t)
		require.NoError(t, f.opened(t, nil))
		require.NoError(t, f.bot.Reap(context.Background()))
		assert.Empty(t, f.gh.Comments(repoName, prNumber), "not late yet")
		f.clock.Advance(7 * time.Hour)
		require.NoError(t, f.bot.Reap(context.Background()))
		assertFailurePosted(t, f, "The run vanished")
		assert.Len(t, f.disp.Cancelled(), 1)
	})
	t.Run("dispatch error", func(t *testing.T) {
		f := newFixture(t)
		f.disp.err = errBoom
		require.ErrorIs(t, f.opened(t, nil), errBoom)
		assertFailurePosted(t, f, "could not be started: boom")
	})
}

func assertFailurePosted(t *testing.T, f *fixture, reason string) {
	t.Helper()
	runs := f.gh.CheckRuns(repoName)
	require.Len(t, runs, 1)
	assert.Equal(t, "failure", runs[0].Conclusion)
	assert.Equal(t, "bench failed", runs[0].Title)
	assert.Contains(t, runs[0].Summary, reason)
	comments := f.gh.Comments(repoName, prNumber)
	require.Len(t, comments, 1)
	assert.Contains(t, comments[0].Body, "failed; there is no verdict")
	assert.Contains(t, comments[0].Body, reason)
}

func workflowRunPayload(t *testing.T, run bot.RunID, conclusion string) []byte {
	return payload(t, "workflow_run.completed.json", map[string]any{
		"repository.name":            "Hello-World",
		"repository.owner.login":     "Codertocat",
		"repository.default_branch":  "master",
		"workflow_run.path":          ".github/workflows/pairbench.yml",
		"workflow_run.display_title": "pairbench " + string(run),
		"workflow_run.conclusion":    conclusion,
		"workflow_run.html_url":      "https://github.com/Codertocat/Hello-World/actions/runs/1",
	})
}

func TestWorkflowRunCompleted(t *testing.T) {
	t.Run("success", func(t *testing.T) {
		f := newFixture(t)
		require.NoError(t, f.opened(t, nil))
		run := f.disp.Dispatched()[0].RunID
		f.storeReport(t, run, pairbench.Slower)
		require.NoError(t, f.deliver(t, "workflow_run", workflowRunPayload(t, run, "success")))
		runs := f.gh.CheckRuns(repoName)
		assert.Equal(t, "failure", runs[0].Conclusion, "slower maps to failure")
		assert.Equal(t, []string{"bench: slower"}, f.gh.IssueLabels(repoName, prNumber))
	})
	t.Run("failure", func(t *testing.T) {
		f := newFixture(t)
		require.NoError(t, f.opened(t, nil))
		run := f.disp.Dispatched()[0].RunID
		require.NoError(t, f.deliver(t, "workflow_run", workflowRunPayload(t, run, "failure")))
		assertFailurePosted(t, f, `concluded "failure"`)
	})
	t.Run("after a restart", func(t *testing.T) {
		f := newFixture(t)
		require.NoError(t, f.opened(t, nil))
		run := f.disp.Dispatched()[0].RunID
		f.storeReport(t, run, pairbench.Better)
		// A new bot, with no memory of the run, finds its check run.
		restarted, err := bot.New(bot.Config{Clients: f.clients, Dispatcher: f.disp, Store: f.store})
		require.NoError(t, err)
		require.NoError(t, restarted.Handle(context.Background(), bot.Delivery{Event: "workflow_run", InstallationID: installID, Payload: workflowRunPayload(t, run, "success")}))
		runs := f.gh.CheckRuns(repoName)
		assert.Equal(t, "success", runs[0].Conclusion)
		assert.Len(t, f.gh.Comments(repoName, prNumber), 1)
	})
	t.Run("other workflows and titles are ignored", func(t *testing.T) {
		f := newFixture(t)
		require.NoError(t, f.deliver(t, "workflow_run", payload(t, "workflow_run.completed.json", nil)))
		require.NoError(t, f.deliver(t, "workflow_run", payload(t, "workflow_run.completed.json", map[string]any{
			"workflow_run.path": ".github/workflows/pairbench.yml", "workflow_run.display_title": "pairbench nonsense",
		})))
		assert.Empty(t, f.gh.Calls())
	})
}

func TestCheckRunRerequested(t *testing.T) {
	f := newFixture(t)
	ev := map[string]any{
		"action": "rerequested",
		"check_run": map[string]any{
			"name": "pairbench", "head_sha": headSHA,
			"pull_requests": []any{map[string]any{"number": prNumber}},
		},
		"repository":   map[string]any{"name": "Hello-World", "owner": map[string]any{"login": "Codertocat"}, "default_branch": "master"},
		"sender":       map[string]any{"login": writer},
		"installation": map[string]any{"id": installID},
	}
	require.NoError(t, f.deliver(t, "check_run", mustJSON(t, ev)))
	reqs := f.disp.Dispatched()
	require.Len(t, reqs, 1)
	assert.Equal(t, headSHA, reqs[0].HeadSHA)
}

func TestInstallationAcknowledged(t *testing.T) {
	f := newFixture(t)
	require.NoError(t, f.deliver(t, "installation", payload(t, "installation.created.json", nil)))
	require.NoError(t, f.deliver(t, "star", []byte(`{"action":"created"}`)))
	assert.Empty(t, f.gh.Calls())
}

func TestMalformedPayload(t *testing.T) {
	f := newFixture(t)
	for _, ev := range bot.Events() {
		err := f.deliver(t, ev, []byte(`{"action": 5}`))
		var pe *bot.PayloadError
		require.ErrorAs(t, err, &pe, ev)
		assert.Equal(t, ev, pe.Event)
	}
	assert.Empty(t, f.gh.Calls())
}

func TestDomainNamesFromThePullRequestAreChecked(t *testing.T) {
	f := newFixture(t)
	f.gh.Repo(repoName, func(r *githubtest.Repo) {
		files := map[string]string{}
		for k, v := range registryFiles {
			files[k] = v
		}
		files["bench/intents/x$(id)/a.yaml"] = "id: a\n"
		files["bench/intents/Books.Example/b.yaml"] = "id: b\n"
		r.Files[headSHA] = files
		r.Pulls[prNumber].Files = []string{"bench/intents/x$(id)/a.yaml", "bench/intents/Books.Example/b.yaml"}
	})
	require.NoError(t, f.opened(t, nil))
	assert.Empty(t, f.disp.Dispatched(), "directories that are not domain names are not domains")
}
