package bot_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-github/v66/github"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/bot"
	"github.com/pairbench/pairbench/bot/githubtest"
)

// actionClient is what the GitHub Action uses: a plain token.
func actionClient(t *testing.T) (*githubtest.Server, *github.Client) {
	t.Helper()
	gh := githubtest.New(t)
	gh.AddToken("ghs_workflow_token")
	gh.Repo(repoName, func(r *githubtest.Repo) {})
	c, err := bot.NewTokenClient("ghs_workflow_token", gh.URL, nil)
	require.NoError(t, err)
	return gh, c
}

func sha(i int) string { return fmt.Sprintf("%07x%033d", i+1, 0) }

func verdict(t *testing.T, l pairbench.Label, link string) bot.Verdict {
	rep := readReport(t)
	rep.Verdict = l
	return bot.Verdict{RunID: bot.RunID("run-" + string(l)), Report: rep, Link: link}
}

func TestStickyCommentIsEditedNotDuplicated(t *testing.T) {
	t.Parallel()
	gh, c := actionClient(t)
	ctx := context.Background()
	target := bot.Target{Owner: "Codertocat", Repo: "Hello-World", PR: prNumber, SHA: sha(1)}
	// Someone else's comments, including one quoting the marker.
	gh.Repo(repoName, func(r *githubtest.Repo) {
		r.Comments = append(r.Comments,
			githubtest.Comment{ID: 1, Issue: prNumber, Body: "first!", User: "someone", UserType: "User"},
			githubtest.Comment{ID: 2, Issue: prNumber, Body: "<!-- pairbench:rollup --> gotcha", User: "someone", UserType: "User"})
	})

	require.NoError(t, bot.PostVerdict(ctx, c, target, verdict(t, pairbench.Better, "https://example.test/r1")))
	comments := gh.Comments(repoName, prNumber)
	require.Len(t, comments, 3)
	sticky := comments[2]
	assert.Equal(t, "github-actions[bot]", sticky.User)
	assert.Contains(t, sticky.Body, "### pairbench: "+sha(1)[:7]+" ")
	assert.NotContains(t, sticky.Body, "Earlier commits")
	assert.Equal(t, []string{"bench: better"}, gh.IssueLabels(repoName, prNumber))

	target.SHA = sha(2)
	require.NoError(t, bot.PostVerdict(ctx, c, target, verdict(t, pairbench.Slower, "https://example.test/r2")))
	comments = gh.Comments(repoName, prNumber)
	require.Len(t, comments, 3, "the sticky comment is edited, never duplicated")
	assert.Equal(t, sticky.ID, comments[2].ID)
	body := comments[2].Body
	assert.Contains(t, body, "Earlier commits (1)")
	assert.Contains(t, body, "| "+sha(1)[:7]+" | better | [run-better](https://example.test/r1) |")
	assert.Equal(t, "<!-- pairbench:rollup --> gotcha", comments[1].Body, "a person's comment is never captured")
	assert.Equal(t, []string{"bench: slower"}, gh.IssueLabels(repoName, prNumber), "the label is replaced")

	// The same commit again replaces its verdict rather than folding it.
	require.NoError(t, bot.PostVerdict(ctx, c, target, verdict(t, pairbench.Faster, "")))
	body = gh.Comments(repoName, prNumber)[2].Body
	assert.Contains(t, body, "Earlier commits (1)")
	assert.NotContains(t, body, "| slower |")

	// A failure keeps the history and leaves the label alone.
	target.SHA = sha(3)
	require.NoError(t, bot.PostFailure(ctx, c, target, "run-x", "runner ran out of disk"))
	body = gh.Comments(repoName, prNumber)[2].Body
	assert.Contains(t, body, "failed; there is no verdict")
	assert.Contains(t, body, "> runner ran out of disk")
	assert.Contains(t, body, "Earlier commits (2)")
	assert.Equal(t, []string{"bench: faster"}, gh.IssueLabels(repoName, prNumber))

	var colors map[string]string
	gh.Repo(repoName, func(r *githubtest.Repo) {
		colors = map[string]string{}
		for n, l := range r.Labels {
			colors[n] = l.Color
		}
	})
	assert.Equal(t, "1a7f37", colors["bench: better"], "labels are created with their colour")
	assert.Len(t, colors, 3)
}

func TestLabelCreatedOnlyWhenMissing(t *testing.T) {
	t.Parallel()
	gh, c := actionClient(t)
	gh.Repo(repoName, func(r *githubtest.Repo) {
		r.Labels["bench: mixed"] = githubtest.Label{Name: "bench: mixed", Color: "123456"}
		r.IssueLabels[prNumber] = []string{"bug", "bench: better", "bench: slower"}
	})
	target := bot.Target{Owner: "Codertocat", Repo: "Hello-World", PR: prNumber, SHA: sha(1)}
	require.NoError(t, bot.SetLabel(context.Background(), c, target, pairbench.Mixed))
	assert.Equal(t, []string{"bug", "bench: mixed"}, gh.IssueLabels(repoName, prNumber))
	gh.Repo(repoName, func(r *githubtest.Repo) {
		assert.Equal(t, "123456", r.Labels["bench: mixed"].Color, "an existing label keeps its colour")
	})
	before := len(gh.Calls())
	require.NoError(t, bot.SetLabel(context.Background(), c, target, pairbench.Mixed))
	assert.Equal(t, []string{"issues/list-labels-on-issue"}, operationsOf(gh.Calls()[before:]), "a label already set is left alone")
}

func operationsOf(calls []githubtest.Call) []string {
	out := make([]string, len(calls))
	for i, c := range calls {
		out[i] = c.Operation
	}
	return out
}

// TestStickyCommentStaysUnderLimit posts many verdicts with long links
// and a report of many intents: the comment always fits GitHub's limit, and
// the newest earlier verdicts are the ones kept.
func TestStickyCommentStaysUnderLimit(t *testing.T) {
	t.Parallel()
	gh, c := actionClient(t)
	ctx := context.Background()
	rep := readReport(t)
	base := rep.Intents[0]
	rep.Intents = nil
	for i := range 500 {
		in := base
		in.ID = fmt.Sprintf("intent-%04d-%s", i, strings.Repeat("é", 20))
		rep.Intents = append(rep.Intents, in)
	}
	longLink := "https://bucket.s3.example/" + strings.Repeat("x", 1500)
	target := bot.Target{Owner: "Codertocat", Repo: "Hello-World", PR: prNumber}
	var body string
	for i := range 25 {
		target.SHA = sha(i)
		require.NoError(t, bot.PostVerdict(ctx, c, target, bot.Verdict{RunID: bot.RunID(fmt.Sprintf("run-%d", i)), Report: rep, Link: longLink}))
		comments := gh.Comments(repoName, prNumber)
		require.Len(t, comments, 1)
		body = comments[0].Body
		require.LessOrEqual(t, utf8.RuneCountInString(body), bot.MaxCommentChars, "after verdict %d", i)
		require.True(t, utf8.ValidString(body))
		if i > 0 {
			require.True(t, strings.Contains(body, "| "+sha(i - 1)[:7]+" |"), "after verdict %d the previous commit is kept", i)
		}
	}
	assert.Greater(t, len(body), 60000, "the test fills the comment")
	assert.False(t, strings.Contains(body, "| "+sha(0)[:7]+" |"), "the oldest verdicts made room")
}

func TestConclusion(t *testing.T) {
	t.Parallel()
	want := map[pairbench.Label]string{
		pairbench.Better: "success", pairbench.MoreAccurate: "success", pairbench.Faster: "success",
		pairbench.Inconclusive: "neutral", pairbench.NoSignal: "neutral", pairbench.NoAdoption: "neutral", pairbench.Mixed: "neutral",
		pairbench.Slower: "failure", pairbench.LessAccurate: "failure", "": "neutral",
	}
	for _, l := range pairbench.Labels {
		assert.Contains(t, want, l, "label %q has no conclusion in this test", l)
	}
	for l, c := range want {
		assert.Equal(t, c, bot.Conclusion(l), "Conclusion(%q)", l)
	}
}
