package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench/bot/githubtest"
	"github.com/pairbench/pairbench/internal/sandboxtest"
	"github.com/pairbench/pairbench/server"
	"github.com/pairbench/pairbench/service"
)

// TestServeEndToEnd drives the whole service: a signed pull_request delivery
// reaches the bot, which creates a check run and dispatches a bench to the
// local backend; the bench runs for real (Chromium, pi in bubblewrap, the
// scripted model, the example registry read from git at the PR's head
// commit), stores its report, and the bot posts the sticky comment, the
// label and the completed check run on the fake GitHub, which validates
// every request against GitHub's REST description.
func TestServeEndToEnd(t *testing.T) {
	const repoName = "Codertocat/Hello-World"
	repo, sha := registryRepo(t)

	gh := githubtest.New(t)
	appID, keyPEM := testApp(t, gh)
	files := map[string]string{}
	require.NoError(t, fs.WalkDir(os.DirFS(repo), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasPrefix(p, ".git/") {
			return err
		}
		b, err := os.ReadFile(filepath.Join(repo, p))
		files[p] = string(b)
		return err
	}))
	gh.Repo(repoName, func(r *githubtest.Repo) {
		r.DefaultBranch = "master"
		r.Files[sha] = files
		r.Files["master"] = files
		r.Pulls[2] = &githubtest.Pull{Number: 2, HeadSHA: sha, HeadRef: "changes",
			Files: []string{"domains/weather.example/tools/list_cities.js"}}
		r.Permissions["Codertocat"] = "admin"
	})

	tools, err := filepath.Abs("../../tools/node_modules")
	require.NoError(t, err)
	o := validServeOptions(t)
	o.TokenEnv, o.AppID = "", appID
	o.Dispatch, o.Store, o.APIURL, o.GitURL, o.Pairs = "local", t.TempDir(), gh.URL, repo, 2
	o.Bench = defaultBenchOptions()
	o.Bench.Tools, o.Bench.RunsDir, o.Bench.StartDelay, o.Bench.ExampleSites = tools, t.TempDir(), 0, true
	o.Bench.TempDir = sandboxtest.TempDir(t)
	require.NoError(t, o.Bench.finish(""))
	secret := []byte("e2e-secret")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- runServe(ctx, o, service.Secrets{Webhook: secret, PrivateKey: keyPEM}, l, slog.New(slog.DiscardHandler))
	}()

	body := pullRequestOpened(t, sha)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, "http://"+l.Addr().String()+"/webhook", bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-GitHub-Event", "pull_request")
	req.Header.Set("X-GitHub-Delivery", "e2e-1")
	req.Header.Set("X-Hub-Signature-256", server.Sign(secret, body))
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusAccepted, resp.StatusCode)

	require.Eventually(t, func() bool {
		runs := gh.CheckRuns(repoName)
		// The check run, the comment and the label are jobs of their own.
		return len(runs) == 1 && runs[0].Status == "completed" && len(gh.Comments(repoName, 2)) > 0 && len(gh.IssueLabels(repoName, 2)) > 0
	}, 4*time.Minute, time.Second, "the bench ends: its check run completes, the rollup and the label are posted")

	run := gh.CheckRuns(repoName)[0]
	assert.Equal(t, sha, run.HeadSHA)
	assert.NotEqual(t, "failure", run.Conclusion, "the bench succeeded: %s", run.Summary)
	assert.Contains(t, run.Title, "bench:")
	comments := gh.Comments(repoName, 2)
	require.Len(t, comments, 1, "one sticky rollup comment")
	assert.Contains(t, comments[0].Body, "weather-high-oslo")
	assert.Contains(t, comments[0].Body, "scripted model")
	labels := gh.IssueLabels(repoName, 2)
	require.Len(t, labels, 1)
	assert.True(t, strings.HasPrefix(labels[0], "bench: "), labels[0])
	_, err = os.Stat(filepath.Join(o.Store, strings.TrimPrefix(run.ExternalID, ""), "report.json"))
	assert.NoError(t, err, "the report is in the artifact store")

	cancel()
	select {
	case err := <-done:
		assert.NoError(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop")
	}
}

// registryRepo commits the example registry (at the repository's root, as
// a registry repository has it) and returns the repository and commit.
func registryRepo(t *testing.T) (dir, sha string) {
	t.Helper()
	dir = t.TempDir()
	require.NoError(t, os.CopyFS(dir, os.DirFS("../../examples/registry")))
	git := func(args ...string) string {
		cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
			"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com", "GIT_CONFIG_GLOBAL=/dev/null")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, string(out))
		return strings.TrimSpace(string(out))
	}
	git("init", "--quiet", "-b", "master")
	git("add", ".")
	git("commit", "--quiet", "-m", "registry")
	return dir, git("rev-parse", "HEAD")
}

// pullRequestOpened is GitHub's example pull_request.opened payload with its
// head moved to sha.
func pullRequestOpened(t *testing.T, sha string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "bot", "testdata", "webhooks", "pull_request.opened.json"))
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	m["pull_request"].(map[string]any)["head"].(map[string]any)["sha"] = sha
	out, err := json.Marshal(m)
	require.NoError(t, err)
	return out
}
