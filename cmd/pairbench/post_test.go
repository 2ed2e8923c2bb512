package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench/bot/githubtest"
	"github.com/pairbench/pairbench/internal/clitest"
)

const (
	postRepo  = "acme/registry"
	postPR    = 42
	postToken = "ghs_post-test-token"
	shaOne    = "1111111111111111111111111111111111111111"
	shaTwo    = "2222222222222222222222222222222222222222"
)

// fakeGitHub starts the fake GitHub with the test's token and a pull
// request, and puts the token where post reads it.
func fakeGitHub(t *testing.T) *githubtest.Server {
	t.Helper()
	gh := githubtest.New(t)
	gh.AddToken(postToken)
	gh.Repo(postRepo, func(r *githubtest.Repo) {
		r.Pulls[postPR] = &githubtest.Pull{Number: postPR, HeadSHA: shaTwo, HeadRef: "tools"}
	})
	t.Setenv(postTokenEnv, postToken)
	return gh
}

func TestPostVerdictThenEditsTheSameComment(t *testing.T) {
	gh := fakeGitHub(t)
	post := func(sha string) {
		t.Helper()
		code, stdout, stderr := runCmd(t, "post", "--api-url", gh.URL, "--repo", postRepo, "--pr", "42",
			"--sha", sha, "--report", demoDir, "--link", "https://bench.example/demo/report.html")
		require.Equal(t, exitOK, code, stderr)
		assert.Equal(t, "posted on acme/registry#42: faster\n", stdout, "the run's verdict, pooled over the demo's intents")
	}

	post(shaOne)
	comments := gh.Comments(postRepo, postPR)
	require.Len(t, comments, 1)
	body := comments[0].Body
	assert.True(t, strings.HasPrefix(body, "<!-- pairbench:rollup -->"), body)
	assert.Contains(t, body, "### pairbench: 1111111 (run `demo`)", "the heading names the commit outside a code span, so GitHub links it")
	assert.Contains(t, body, "less accurate", "the intents' labels are there too")
	assert.Contains(t, body, "https://bench.example/demo/report.html")
	assert.Equal(t, []string{"bench: faster"}, gh.IssueLabels(postRepo, postPR))

	post(shaTwo)
	comments = gh.Comments(postRepo, postPR)
	require.Len(t, comments, 1, "the sticky comment is edited, not repeated")
	assert.Contains(t, comments[0].Body, "### pairbench: 2222222 (run `demo`)")
	assert.Contains(t, comments[0].Body, "Earlier commits (1)")
	assert.Len(t, gh.CallsTo("issues/update-comment"), 1)
	assert.Equal(t, []string{"bench: faster"}, gh.IssueLabels(postRepo, postPR))
	for _, c := range gh.Calls() {
		assert.Equal(t, githubtest.AuthToken, c.Auth, "%s", c)
	}
}

func TestPostFailure(t *testing.T) {
	gh := fakeGitHub(t)
	code, stdout, stderr := runCmd(t, "post", "--api-url", gh.URL, "--repo", postRepo, "--pr", "42", "--sha", shaOne,
		"--run-id", "pr42-run", "--failure", "sandbox check failed: unprivileged user namespaces are disabled")
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stdout, "failed")
	comments := gh.Comments(postRepo, postPR)
	require.Len(t, comments, 1)
	assert.Contains(t, comments[0].Body, "failed; there is no verdict")
	assert.Contains(t, comments[0].Body, "> sandbox check failed: unprivileged user namespaces are disabled")
	assert.Empty(t, gh.IssueLabels(postRepo, postPR), "a failure leaves the labels alone")
}

func TestPostRefusesBadFlagsWithoutCalling(t *testing.T) {
	gh := fakeGitHub(t)
	base := []string{"post", "--api-url", gh.URL}
	for _, args := range [][]string{
		{"--repo", "acme", "--pr", "42", "--sha", shaOne, "--report", demoDir},
		{"--repo", "acme/registry; rm -rf /", "--pr", "42", "--sha", shaOne, "--report", demoDir},
		{"--repo", postRepo, "--pr", "0", "--sha", shaOne, "--report", demoDir},
		{"--repo", postRepo, "--pr", "42", "--sha", "main", "--report", demoDir},
		{"--repo", postRepo, "--pr", "42", "--sha", shaOne},
		{"--repo", postRepo, "--pr", "42", "--sha", shaOne, "--report", demoDir, "--failure", "x"},
		{"--repo", postRepo, "--pr", "42", "--sha", shaOne, "--report", demoDir, "--link", "javascript:alert(1)"},
		{"--repo", postRepo, "--pr", "42", "--sha", shaOne, "--report", demoDir, "extra"},
	} {
		code, _, stderr := runCmd(t, append(base, args...)...)
		assert.Equal(t, exitUsage, code, "%v: %s", args, stderr)
	}

	t.Setenv(postTokenEnv, "")
	code, _, stderr := runCmd(t, append(base, "--repo", postRepo, "--pr", "42", "--sha", shaOne, "--report", demoDir)...)
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, stderr, "GITHUB_TOKEN")

	t.Setenv(postTokenEnv, postToken)
	code, _, stderr = runCmd(t, append(base, "--repo", postRepo, "--pr", "42", "--sha", shaOne, "--report", t.TempDir())...)
	assert.Equal(t, exitFailure, code)
	assert.Contains(t, stderr, "report.json")
	assert.Empty(t, gh.Calls())
}

// TestReportAndPostOfAnInterruptedRun reports a run that stopped after two
// of its four pairs, as a SIGTERM'd run does: report writes it with its
// first line saying so and warns, and post refuses to post it as a verdict.
func TestReportAndPostOfAnInterruptedRun(t *testing.T) {
	dir, rows := smallRun(t)
	lines := strings.SplitAfter(string(rows), "\n")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "rows.jsonl"), []byte(strings.Join(lines[:4], "")), 0o644))

	code, _, stderr := runCmd(t, "report", dir)
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stderr, "warning: the run is incomplete: 2 of 4 planned pairs have not run")
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	require.NoError(t, err)
	first, _, _ := strings.Cut(string(md), "\n")
	assert.True(t, strings.HasPrefix(first, "**pairbench: incomplete run, no verdict**: 2 of 4 planned pairs not run yet"), first)
	assert.False(t, clitest.ReadReport(t, dir).Final())

	gh := fakeGitHub(t)
	code, _, stderr = runCmd(t, "post", "--api-url", gh.URL, "--repo", postRepo, "--pr", "42", "--sha", shaOne, "--report", dir)
	assert.Equal(t, exitFailure, code)
	assert.Contains(t, stderr, "run r1 is incomplete: 2 of 4 planned pairs have not run")
	assert.Empty(t, gh.Comments(postRepo, postPR), "nothing is posted")
	assert.Empty(t, gh.IssueLabels(postRepo, postPR))
}
