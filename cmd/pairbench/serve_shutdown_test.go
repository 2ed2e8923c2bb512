package main

import (
	"context"
	"log/slog"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench/bot/githubtest"
	"github.com/pairbench/pairbench/internal/clitest"
	"github.com/pairbench/pairbench/service"
)

// TestServeShutsDownInTimeWhateverGitDoes: a local bench is fetching its
// registry from a git server that accepts the connection and never answers.
// The service is told to stop: it returns within --shutdown-timeout (and a
// little), the fetch killed with its helpers (no git process outlives it),
// the bench put back in the queue.
func TestServeShutsDownInTimeWhateverGitDoes(t *testing.T) {
	clitest.BecomeSubreaper(t)
	stall, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer stall.Close()
	var conns atomic.Int32
	go func() {
		for {
			c, err := stall.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			defer c.Close() // held open, never answered
		}
	}()

	gh := githubtest.New(t)
	appID, keyPEM := clitest.App(t, gh)
	sha := "0123456789abcdef0123456789abcdef01234567"
	files := map[string]string{
		".pairbench.yml": "", "domains/weather.example/domain.json": `{}`,
		"domains/weather.example/tools/list_cities.js": "({})",
		"bench/intents/weather.example/high.yaml":      "id: weather-high\ndomain: weather.example\n",
	}
	gh.Repo("Codertocat/Hello-World", func(r *githubtest.Repo) {
		r.DefaultBranch = "master"
		r.Files[sha], r.Files["master"] = files, files
		r.Pulls[2] = &githubtest.Pull{Number: 2, HeadSHA: sha, HeadRef: "changes", Files: []string{"domains/weather.example/tools/list_cities.js"}}
	})
	o := validServeOptions(t)
	o.TokenEnv, o.AppID = "", appID
	o.Dispatch, o.Store, o.APIURL = "local", t.TempDir(), gh.URL
	o.GitURL = "http://" + stall.Addr().String() + "/{owner}/{repo}.git"
	o.ShutdownTimeout = 3 * time.Second
	o.Bench = defaultBenchOptions()
	o.Bench.RunsDir, o.Bench.TempDir = t.TempDir(), t.TempDir()
	require.NoError(t, o.Bench.finish())
	secret := []byte("shutdown-secret")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- runServe(ctx, o, service.Secrets{Webhook: secret, PrivateKey: keyPEM}, l, slog.New(slog.DiscardHandler))
	}()

	githubtest.MustDeliver(t, "http://"+l.Addr().String()+"/webhook", secret, "pull_request", "stall-1", clitest.PullRequestOpened(t, sha, ""))
	require.Eventually(t, func() bool { return conns.Load() > 0 }, time.Minute, 20*time.Millisecond, "git is fetching from the stalled server")
	time.Sleep(500 * time.Millisecond)

	stopped := time.Now()
	cancel()
	select {
	case err := <-done:
		took := time.Since(stopped)
		assert.NoError(t, err)
		assert.Less(t, took, o.ShutdownTimeout+2*time.Second, "shutdown took %v", took)
		t.Logf("shutdown with git stalled took %v (timeout %v)", took.Round(time.Millisecond), o.ShutdownTimeout)
	case <-time.After(o.ShutdownTimeout + 30*time.Second):
		t.Fatal("serve outlived its shutdown timeout while git stalled")
	}
	gitLeft := func() []string {
		var out []string
		for _, p := range clitest.LiveOrphans() {
			if strings.Contains(p, "git") {
				out = append(out, p)
			}
		}
		return out
	}
	assert.Eventually(t, func() bool { return len(gitLeft()) == 0 }, time.Minute, 50*time.Millisecond,
		"git processes outlived the service: %v", gitLeft())
	runs := gh.CheckRuns("Codertocat/Hello-World")
	require.Len(t, runs, 1)
	assert.NotEqual(t, "completed", runs[0].Status, "the bench was put back in the queue, not failed")
}
