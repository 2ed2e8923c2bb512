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

	"github.com/pairbench/pairbench/bot/githubtest"
	"github.com/pairbench/pairbench/internal/clitest"
	"github.com/pairbench/pairbench/internal/sandboxtest"
)

// TestServeResumesALocalBenchAfterKill9 runs the real `pairbench serve`
// with the local backend (Chromium, the agent in bubblewrap, the scripted
// model) and kills it with SIGKILL once the bench has scored rows. The
// restarted service runs the same run id again, which resumes it: the
// rows from before the kill are kept, every pair is scored exactly once,
// and the one check run completes with the verdict.
func TestServeResumesALocalBenchAfterKill9(t *testing.T) {
	tools := clitest.RealStack(t)
	bin := clitest.Build(t)
	clitest.BecomeSubreaper(t)
	repo, sha, base := clitest.RegistryRepo(t)
	gh := githubtest.New(t)
	appID, keyPEM := clitest.App(t, gh)
	files, err := githubtest.TreeFiles(os.DirFS(repo))
	require.NoError(t, err)
	const repoName = "Codertocat/Hello-World"
	gh.Repo(repoName, func(r *githubtest.Repo) {
		r.DefaultBranch = "master"
		r.Files[sha], r.Files["master"] = files, files
		r.Pulls[2] = &githubtest.Pull{Number: 2, HeadSHA: sha, HeadRef: "changes", Files: []string{"domains/weather.example/tools/list_cities.js"}}
	})

	dir := t.TempDir()
	keyFile := filepath.Join(dir, "app.pem")
	require.NoError(t, os.WriteFile(keyFile, keyPEM, 0o600))
	runs := filepath.Join(dir, "runs")
	temp := filepath.Join(sandboxtest.TempDir(t), "tmp")
	require.NoError(t, os.MkdirAll(temp, 0o755))
	logFile, err := os.Create(filepath.Join(dir, "serve.log"))
	require.NoError(t, err)
	defer logFile.Close()
	secret := []byte("resume-secret")
	p := &serveProc{t: t, bin: bin, addr: freeAddr(t), log: logFile,
		env: append(os.Environ(), "PAIRBENCH_WEBHOOK_SECRET="+string(secret)),
		args: []string{"--app-id", strconv.FormatInt(appID, 10), "--private-key-file", keyFile, "--api-url", gh.URL,
			"--store", filepath.Join(dir, "store"), "--state-dir", filepath.Join(dir, "state"), "--git-url", repo,
			"--tools", tools, "--runs-dir", runs, "--temp-dir", temp, "--pairs", "3", "--start-delay", "0",
			"--example-sites", "--log-format", "json"}}
	p.start()
	ctx, cancel := context.WithTimeout(t.Context(), 8*time.Minute)
	defer cancel()
	(&cluster{procs: []*serveProc{p}}).post(ctx, secret, "pull_request", "resume-1", clitest.PullRequestOpened(t, sha, base))

	var runID string
	require.Eventually(t, func() bool {
		runs := gh.CheckRuns(repoName)
		if len(runs) != 1 {
			return false
		}
		runID = runs[0].ExternalID
		return countLines(filepath.Join(dir, "runs", runID, "rows.jsonl")) >= 2
	}, 4*time.Minute, 100*time.Millisecond, "the bench scores rows; log: %s", tail(logFile.Name()))
	before := countLines(filepath.Join(runs, runID, "rows.jsonl"))
	p.kill()
	clitest.WaitNoOrphans(t, clitest.OrphanGrace)
	t.Logf("killed with %d rows of run %s on disk", before, runID)

	p.start()
	defer func() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		<-p.exited
	}()
	require.Eventually(t, func() bool {
		runs := gh.CheckRuns(repoName)
		// The check run and the label are jobs of their own.
		return len(runs) == 1 && runs[0].Status == "completed" && len(gh.IssueLabels(repoName, 2)) > 0
	}, 5*time.Minute, 200*time.Millisecond, "the resumed bench ends; log: %s", tail(logFile.Name()))
	cr := gh.CheckRuns(repoName)[0]
	assert.Equal(t, runID, cr.ExternalID, "the same run, resumed")
	assert.NotEqual(t, "failure", cr.Conclusion, "the bench succeeded: %s", cr.Summary)
	assert.Contains(t, cr.Title, "bench: ")
	rows := clitest.CheckCompleteRun(t, filepath.Join(runs, runID))
	assert.GreaterOrEqual(t, len(rows), before, "the rows from before the kill are kept")
	labels := gh.IssueLabels(repoName, 2)
	require.Len(t, labels, 1)
	assert.True(t, strings.HasPrefix(labels[0], "bench: "))
}
