package main

import (
	"context"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench/bot/githubtest"
	"github.com/pairbench/pairbench/internal/clitest"
	"github.com/pairbench/pairbench/service"
)

// TestServeQuotesRegistryProblems opens a pull request whose registry has
// problems at its head: the local backend's bench fails before any trial,
// and the check run and the sticky comment quote each problem by its file
// (its path in the repository) and line, not a pointer to run validate.
func TestServeQuotesRegistryProblems(t *testing.T) {
	const repoName = "Codertocat/Hello-World"
	repo := t.TempDir()
	require.NoError(t, os.CopyFS(repo, os.DirFS("../../examples/registry")))
	intent := filepath.Join(repo, "bench", "intents", "weather.example", "weather-high-oslo.yaml")
	b, err := os.ReadFile(intent)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(intent, append(b, []byte("colour: blue\n")...), 0o644))
	sha := clitest.CommitAll(t, repo)

	gh := githubtest.New(t)
	appID, keyPEM := clitest.App(t, gh)
	files, err := githubtest.TreeFiles(os.DirFS(repo))
	require.NoError(t, err)
	gh.Repo(repoName, func(r *githubtest.Repo) {
		r.DefaultBranch = "master"
		r.Files[sha] = files
		r.Pulls[2] = &githubtest.Pull{Number: 2, HeadSHA: sha, HeadRef: "changes",
			Files: []string{"bench/intents/weather.example/weather-high-oslo.yaml"}}
		r.Permissions["Codertocat"] = "admin"
	})

	o := validServeOptions(t)
	o.TokenEnv, o.AppID = "", appID
	o.Dispatch, o.Store, o.APIURL, o.GitURL = "local", t.TempDir(), gh.URL, repo
	o.Bench = defaultBenchOptions()
	o.Bench.RunsDir, o.Bench.TempDir = t.TempDir(), t.TempDir()
	require.NoError(t, o.Bench.finish())
	secret := []byte("problems-secret")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- runServe(ctx, o, service.Secrets{Webhook: secret, PrivateKey: keyPEM}, l, slog.New(slog.DiscardHandler))
	}()

	githubtest.MustDeliver(t, "http://"+l.Addr().String()+"/webhook", secret, "pull_request", "problems-1", clitest.PullRequestOpened(t, sha, ""))

	// The check run and the comment are written by jobs of their own: wait
	// for both.
	require.Eventually(t, func() bool {
		runs := gh.CheckRuns(repoName)
		return len(runs) == 1 && runs[0].Status == "completed" && len(gh.Comments(repoName, 2)) > 0
	}, time.Minute, 200*time.Millisecond, "the bench fails, completes its check run and comments")
	const problem = `bench/intents/weather.example/weather-high-oslo.yaml:`
	run := gh.CheckRuns(repoName)[0]
	assert.Equal(t, "failure", run.Conclusion)
	assert.Contains(t, run.Summary, problem)
	assert.Contains(t, run.Summary, `unknown field "colour"`)
	comments := gh.Comments(repoName, 2)
	require.Len(t, comments, 1)
	assert.Contains(t, comments[0].Body, problem, "the comment names the file in the repository and its line")
	assert.Contains(t, comments[0].Body, `unknown field "colour"`)
	assert.NotContains(t, comments[0].Body, os.TempDir(), "no path of the service's host")
	assert.Contains(t, comments[0].Body, "\n> - `"+problem, "one problem a line, as a list")
	assert.NotContains(t, comments[0].Body, "try again", "a re-run of the commit cannot help")

	cancel()
	select {
	case err := <-done:
		assert.NoError(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop")
	}
}
