//go:build e2e

package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/bot/githubtest"
	"github.com/pairbench/pairbench/internal/clitest"
	"github.com/pairbench/pairbench/internal/sandboxtest"
	"github.com/pairbench/pairbench/rundir"
)

// TestServeEndToEnd drives the whole service: a signed pull_request delivery
// reaches the bot, which creates a check run and dispatches a bench to the
// local backend; the bench runs for real (Chromium, pi in bubblewrap, the
// scripted model, the example registry read from git at the PR's head
// commit), stores its report, and the bot posts the sticky comment, the
// label and the completed check run on the fake GitHub, which validates
// every request against GitHub's REST description.
func TestServeEndToEnd(t *testing.T) {
	store, run, gh := serveOnePullRequest(t, "--example-sites")
	comments := gh.Comments(e2eRepo, 2)
	require.Len(t, comments, 1, "one sticky rollup comment")
	assert.Contains(t, comments[0].Body, "weather-high-oslo")
	assert.Contains(t, comments[0].Body, "scripted model")
	labels := gh.IssueLabels(e2eRepo, 2)
	require.Len(t, labels, 1)
	assert.True(t, strings.HasPrefix(labels[0], "bench: "), labels[0])
	_, err := os.Stat(filepath.Join(store, run.ExternalID, "report.json"))
	assert.NoError(t, err, "the report is in the artifact store")
}

// TestServeEndToEndOnKernelBrowsers is TestServeEndToEnd with the local
// backend's browsers in a fake Kernel (real Chromium behind Kernel's API),
// as `serve --browser kernel --stealth --kernel-url URL` with
// KERNEL_API_KEY set configures it: every trial, in both arms, ran in a
// stealth browser of the service's, each deleted at the end, and the run
// records the provider.
func TestServeEndToEndOnKernelBrowsers(t *testing.T) {
	fake := clitest.KernelForExampleSites(t)
	store, run, _ := serveOnePullRequest(t, "--browser", "kernel", "--stealth", "--kernel-url", fake.URL)
	// On a busy machine an attempt may abort and its pair run again: the
	// stored run is complete, each arm of each pair scored once in the
	// pair's last attempt, correct.
	rows := clitest.CheckCompleteRun(t, filepath.Join(store, run.ExternalID))
	type pair struct {
		intent string
		n      int
	}
	last := map[pair]int{}
	for _, r := range rows {
		last[pair{r.Intent, r.Pair}] = max(last[pair{r.Intent, r.Pair}], r.Attempt)
	}
	scored := 0
	for _, r := range rows {
		if r.Attempt == last[pair{r.Intent, r.Pair}] {
			scored++
			assert.Equal(t, pairbench.Correct, r.Outcome, "pair %d %s: %s", r.Pair, r.Arm, r.Reason)
		}
	}
	assert.Equal(t, 4, scored, "2 pairs, both arms")
	creates := fake.Creates()
	assert.GreaterOrEqual(t, len(creates), 4, "a browser per trial: 2 pairs, both arms")
	for _, c := range creates {
		assert.True(t, c.Stealth, "--stealth reaches every browser")
	}
	assert.Empty(t, fake.Live(), "every browser deleted")
	plan, err := os.ReadFile(filepath.Join(store, run.ExternalID, "run.json"))
	require.NoError(t, err)
	assert.Contains(t, string(plan), `"provider": "kernel"`, "the run records where its browsers ran")
	assert.NotContains(t, string(plan), fake.Key, "the key is not in the run")
}

const e2eRepo = "Codertocat/Hello-World"

// serveOnePullRequest runs the real `pairbench serve` with the local
// backend, its flags beside the test's own ones in args, sends it a pull
// request that changes a domain's tools, waits for the bench to end (its
// check run completed, the rollup and the label posted), stops it with
// SIGTERM (it exits 0) and returns the artifact store, the check run and
// the fake GitHub.
func serveOnePullRequest(t *testing.T, args ...string) (string, githubtest.CheckRun, *githubtest.Server) {
	tools := clitest.RealStack(t)
	bin := clitest.Build(t)
	repo, sha, base := clitest.RegistryRepo(t)

	gh := githubtest.New(t)
	appID, keyPEM := clitest.App(t, gh)
	files, err := githubtest.TreeFiles(os.DirFS(repo))
	require.NoError(t, err)
	gh.Repo(e2eRepo, func(r *githubtest.Repo) {
		r.DefaultBranch = "master"
		r.Files[sha] = files
		r.Files["master"] = files
		r.Pulls[2] = &githubtest.Pull{Number: 2, HeadSHA: sha, HeadRef: "changes",
			Files: []string{"domains/weather.example/tools/list_cities.js"}}
		r.Permissions["Codertocat"] = "admin"
	})

	dir := t.TempDir()
	keyFile := filepath.Join(dir, "app.pem")
	require.NoError(t, os.WriteFile(keyFile, keyPEM, 0o600))
	store := filepath.Join(dir, "store")
	logFile, err := os.Create(filepath.Join(dir, "serve.log"))
	require.NoError(t, err)
	t.Cleanup(func() { logFile.Close() })
	secret := []byte("e2e-secret")
	p := &serveProc{t: t, bin: bin, addr: freeAddr(t), log: logFile,
		env: append(os.Environ(), "PAIRBENCH_WEBHOOK_SECRET="+string(secret)),
		args: append([]string{"--dispatch", "local", "--app-id", strconv.FormatInt(appID, 10), "--private-key-file", keyFile,
			"--api-url", gh.URL, "--store", store, "--state-dir", filepath.Join(dir, "state"), "--git-url", repo, "--pairs", "2",
			"--tools", tools, "--runs-dir", filepath.Join(dir, "runs"), "--temp-dir", sandboxtest.TempDir(t), "--start-delay", "0"},
			args...)}
	p.start()
	t.Cleanup(func() {
		require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
		select {
		case <-p.exited:
			code, sig := clitest.ExitStatus(p.waitErr)
			assert.Zero(t, code, "serve stopped by SIGTERM (signal %v): %s", sig, tail(logFile.Name()))
		case <-time.After(30 * time.Second):
			t.Error("serve did not stop")
		}
	})

	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	// Posted until serve, starting, takes it.
	status := (&cluster{procs: []*serveProc{p}}).post(ctx, secret, "pull_request", "e2e-1", clitest.PullRequestOpened(t, sha, base))
	require.Equal(t, 2, status/100, "the delivery is taken; log: %s", tail(logFile.Name()))

	require.Eventually(t, func() bool {
		runs := gh.CheckRuns(e2eRepo)
		// The check run, the comment and the label are jobs of their own.
		return len(runs) == 1 && runs[0].Status == "completed" && len(gh.Comments(e2eRepo, 2)) > 0 && len(gh.IssueLabels(e2eRepo, 2)) > 0
	}, 4*time.Minute, time.Second, "the bench ends: its check run completes, the rollup and the label are posted")

	run := gh.CheckRuns(e2eRepo)[0]
	assert.Equal(t, sha, run.HeadSHA)
	assert.NotEqual(t, "failure", run.Conclusion, "the bench succeeded: %s", run.Summary)
	assert.Contains(t, run.Title, "bench:")
	// The pull request edits a weather.example tool: the bench compares its
	// tools with the base commit's, as config.Comparisons chooses.
	plan, err := rundir.ReadPlan(filepath.Join(store, run.ExternalID, "run.json"))
	require.NoError(t, err)
	require.NotNil(t, plan.Arms, "the run records its arms")
	assert.Equal(t, "tools@"+base, plan.Arms.Control.String(), "against the pull request's base")
	assert.Equal(t, base, plan.Arms.Control.Commit)
	for _, in := range plan.Intents {
		assert.Equal(t, "weather.example", in.Domain, "only the domain the pull request changed")
		require.NotNil(t, in.Arms)
		assert.NotEmpty(t, in.Arms.Control.Tools, "the base's tools, not none")
	}
	return store, run, gh
}
