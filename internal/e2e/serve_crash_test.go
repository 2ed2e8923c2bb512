//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/bot/githubtest"
	"github.com/pairbench/pairbench/internal/clitest"
	"github.com/pairbench/pairbench/state/statetest"
)

var (
	serveKills = flag.Int("serve.kills", 24, "SIGKILL points TestServeSurvivesKill9 tries during its stream of deliveries")
	serveSeed  = flag.Uint64("serve.seed", 1, "seed of TestServeSurvivesKill9's stream and kill points")
	serveFault = flag.Bool("serve.faults", true, "TestServeSurvivesKill9 also injects GitHub faults (5xx, resets, secondary rate limits, lost answers)")
	serveLog   = flag.String("serve.log", "", "file TestServeSurvivesKill9 writes the service's log to, kept after the test (default: a temporary one); TestServeReplicasSurviveKill9, which runs beside it, writes FILE.replicas")
)

const crashRepo = "octo/registry"

// crashRegistry is what every commit of the test carries: the example
// registry, which serve checks before each dispatch, and the workflow. It is
// read when first asked for, never at package init: the test binary also
// runs as the sandbox's init, where the examples are out of sight.
var crashRegistry = sync.OnceValue(func() map[string]string {
	files, err := githubtest.TreeFiles(os.DirFS(filepath.Join("..", "..", "examples", "registry")))
	if err != nil {
		panic(err)
	}
	files[".github/workflows/pairbench.yml"] = "name: pairbench\n"
	return files
})

// verdictOf is the verdict the test's "runner" reports for a commit: a
// function of the commit, so the label at the end says whose verdict it is.
func verdictOf(sha string) pairbench.Label {
	labels := []pairbench.Label{pairbench.Better, pairbench.Faster, pairbench.LessAccurate, pairbench.Slower, pairbench.Inconclusive}
	n, _ := strconv.ParseUint(sha[:8], 16, 64)
	return labels[n%uint64(len(labels))]
}

// serveProc runs the real pairbench serve binary, restartable.
type serveProc struct {
	t         *testing.T
	bin, addr string
	args      []string
	env       []string
	cmd       *exec.Cmd
	exited    chan struct{}
	waitErr   error // how the last start ended, once exited is closed
	log       *os.File
	starts    int
}

func (p *serveProc) start() {
	p.t.Helper()
	p.cmd = exec.Command(p.bin, append([]string{"serve", "--addr", p.addr}, p.args...)...)
	p.cmd.Env = p.env
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	require.NoError(p.t, p.cmd.Start())
	p.starts++
	p.exited = make(chan struct{})
	go func(c *exec.Cmd, done chan struct{}) { p.waitErr = c.Wait(); close(done) }(p.cmd, p.exited)
}

func (p *serveProc) kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.exited
}

// try sends a signed delivery once and returns the status of the answer,
// 0 if none came.
func (p *serveProc) try(ctx context.Context, secret []byte, event, id string, body []byte) int {
	return githubtest.Deliver(ctx, "http://"+p.addr+"/webhook", secret, event, id, body)
}

// cluster is the replicas of one service behind a load balancer.
type cluster struct {
	procs []*serveProc
	mu    sync.Mutex
	next  int
}

// post sends a signed delivery until a replica answers 2xx (an operator
// redelivering what failed from the App's delivery log), each try to the
// next replica, and returns the status of the answer that took it.
func (c *cluster) post(ctx context.Context, secret []byte, event, id string, body []byte) int {
	for {
		c.mu.Lock()
		p := c.procs[c.next%len(c.procs)]
		c.next++
		c.mu.Unlock()
		if status := p.try(ctx, secret, event, id, body); status/100 == 2 {
			return status
		}
		select {
		case <-ctx.Done():
			return 0
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func freeAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().String()
}

// TestServeSurvivesKill9 runs the real `pairbench serve` (an App, the
// Actions backend, SQLite state) against the fake GitHub through a stream
// of deliveries — pull requests opened, pushes, /bench commands, the
// workflow runs the service dispatched, and redeliveries of deliveries
// already taken — while it is killed with SIGKILL at -serve.kills random
// points and restarted at once, and while the fake injects 5xx answers,
// connection resets, secondary rate limits and lost answers (a write done
// whose answer never arrives). At the end: every pull request's head was
// benched exactly once and shows its own verdict (check run, label, one
// rollup whose headline is the head's), no commit was dispatched twice,
// and no check run is left queued or in progress.
//
//	go test -tags e2e ./internal/e2e -run TestServeSurvivesKill9 -serve.kills 40 -v
func TestServeSurvivesKill9(t *testing.T) { serveCrash(t, "sqlite", 1) }

// TestServeReplicasSurviveKill9 is TestServeSurvivesKill9 for two replicas
// sharing one PostgreSQL database (Debian's, started by the test) behind a
// load balancer that sends each try of a delivery to the next replica: a
// redelivery may reach the other replica, the jobs run on both, and the
// SIGKILLs fall on either.
func TestServeReplicasSurviveKill9(t *testing.T) { serveCrash(t, "postgres", 2) }

// serveCrash runs the crash test on a database dialect with that many
// replicas.
func serveCrash(t *testing.T, dialect string, replicas int) {
	if testing.Short() {
		t.Skip("kills and restarts the service dozens of times (a minute or two); skipped with -short")
	}
	// Independent of every other test (a fake GitHub, a store, a database
	// and service processes of its own; no environment, no browser): it
	// waits on the services' job queues more than it computes.
	t.Parallel()
	bin := clitest.Build(t)
	rng := rand.New(rand.NewPCG(*serveSeed, 7))
	gh := githubtest.New(t)
	appID, keyPEM := clitest.App(t, gh)
	const prs = 6
	gh.Repo(crashRepo, func(r *githubtest.Repo) {
		r.DefaultBranch = "main"
		r.Files["main"] = crashRegistry()
		for pr := 1; pr <= prs; pr++ {
			r.Pulls[pr] = &githubtest.Pull{Number: pr, HeadRef: fmt.Sprint("change-", pr),
				Files: []string{"domains/books.example/tools/find_books.js"}}
		}
		r.Permissions["maintainer"] = "write"
	})
	if *serveFault {
		var mu sync.Mutex
		frng := rand.New(rand.NewPCG(*serveSeed, 11))
		gh.SetFaults(func(r *http.Request) githubtest.Fault {
			mu.Lock()
			defer mu.Unlock()
			if strings.HasPrefix(r.URL.Path, "/app/installations/") {
				return githubtest.Fault{} // leave token minting alone: it is not the bot's call to retry
			}
			switch x := frng.Float64(); {
			case x < 0.04:
				return githubtest.Fault{Status: http.StatusBadGateway, Message: "Server Error"}
			case x < 0.06:
				return githubtest.Fault{Reset: true}
			case x < 0.08:
				return githubtest.Fault{Status: http.StatusForbidden, Header: http.Header{"Retry-After": {"1"}},
					Message:          "You have exceeded a secondary rate limit. Please wait a few minutes before you try again.",
					DocumentationURL: "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits"}
			case x < 0.10:
				return githubtest.Fault{LostAnswer: true} // done, but the answer never arrives
			}
			return githubtest.Fault{}
		})
	}

	dir := t.TempDir()
	store := filepath.Join(dir, "store")
	require.NoError(t, os.MkdirAll(store, 0o755))
	keyFile := filepath.Join(dir, "app.pem")
	require.NoError(t, os.WriteFile(keyFile, keyPEM, 0o600))
	logPath := filepath.Join(dir, "serve.log")
	if *serveLog != "" {
		logPath = *serveLog
		if replicas > 1 {
			logPath += ".replicas" // the tests run at once: a file each
		}
	}
	logFile, err := os.Create(logPath)
	require.NoError(t, err)
	defer logFile.Close()
	secret := []byte("crash-secret")
	env := append(os.Environ(), "PAIRBENCH_WEBHOOK_SECRET="+string(secret))
	stateArgs := []string{"--state-dir", filepath.Join(dir, "state")}
	if dialect == "postgres" {
		env = append(env, "PAIRBENCH_TEST_POSTGRES_URL="+statetest.Postgres(t))
		stateArgs = []string{"--postgres-env", "PAIRBENCH_TEST_POSTGRES_URL"}
	}
	c := &cluster{}
	for i := range replicas {
		p := &serveProc{t: t, bin: bin, addr: freeAddr(t), log: logFile, env: env,
			args: append([]string{"--app-id", strconv.FormatInt(appID, 10), "--private-key-file", keyFile, "--api-url", gh.URL,
				"--store", store, "--dispatch", "actions", "--replica-id", fmt.Sprint("replica-", i),
				"--public-url", "https://bench.example.test", "--shutdown-timeout", "5s", "--log-format", "json"}, stateArgs...)}
		p.start()
		c.procs = append(c.procs, p)
	}
	defer func() {
		for _, p := range c.procs {
			if p.cmd.ProcessState == nil {
				p.kill()
			}
		}
	}()
	ctx, cancel := context.WithTimeout(t.Context(), 8*time.Minute)
	defer cancel()

	// The "runner": every dispatched workflow stores its report and
	// completes; its workflow_run delivery is sent like any other.
	var mu sync.Mutex
	seq := 0
	send := func(event string, body []byte) {
		mu.Lock()
		seq++
		id := fmt.Sprintf("crash-%05d", seq)
		mu.Unlock()
		if c.post(ctx, secret, event, id, body) == http.StatusAccepted && rng.Float64() < 0.2 {
			// GitHub redelivers a delivery the service already took.
			assert.Equal(t, http.StatusOK, c.post(ctx, secret, event, id, body), "a redelivery is a duplicate")
		}
	}
	completed := map[int64]bool{}
	completeDispatches := func() {
		for _, d := range gh.Dispatches(crashRepo) {
			if completed[d.RunID] {
				continue
			}
			run := d.Inputs["run_id"].(string)
			sha := d.Inputs["head_sha"].(string)
			storeReport(t, store, run, verdictOf(sha))
			gh.CompleteWorkflowRun(crashRepo, d.RunID, "success")
			completed[d.RunID] = true
			send("workflow_run", mustMarshal(t, map[string]any{
				"action": "completed",
				"workflow_run": map[string]any{"id": d.RunID, "event": "workflow_dispatch", "path": ".github/workflows/pairbench.yml",
					"display_title": "pairbench " + run, "conclusion": "success", "status": "completed",
					"html_url":        fmt.Sprintf("https://github.com/%s/actions/runs/%d", crashRepo, d.RunID),
					"head_repository": map[string]any{"full_name": crashRepo}},
				"repository": repoJSON(), "installation": map[string]any{"id": 1},
			}))
		}
	}

	// The killer: SIGKILL at random points, on a random replica, restarted
	// at once.
	killerDone := make(chan struct{})
	kills := 0
	go func() {
		defer close(killerDone)
		krng := rand.New(rand.NewPCG(*serveSeed, 3))
		for kills < *serveKills && ctx.Err() == nil {
			time.Sleep(200*time.Millisecond + time.Duration(krng.Int64N(int64(1300*time.Millisecond))))
			p := c.procs[krng.IntN(len(c.procs))]
			p.kill()
			p.start()
			kills++
		}
	}()

	heads := map[int]string{}
	step := 0
	for ctx.Err() == nil {
		select {
		case <-killerDone:
		default:
			step++
			pr := 1 + rng.IntN(prs)
			action := "synchronize"
			if heads[pr] == "" {
				action = "opened"
			}
			switch x := rng.Float64(); {
			case x < 0.55 || heads[pr] == "":
				sha := fmt.Sprintf("%08x%032x", rng.Uint32(), step)
				gh.Repo(crashRepo, func(r *githubtest.Repo) {
					r.Files[sha] = crashRegistry()
					r.Pulls[pr].HeadSHA = sha
				})
				heads[pr] = sha
				send("pull_request", pullEvent(pr, sha, action))
			case x < 0.75:
				send("issue_comment", commentEvent(pr, "/bench status"))
			default:
				completeDispatches()
			}
			time.Sleep(time.Duration(rng.Int64N(int64(150 * time.Millisecond))))
			continue
		}
		break
	}
	require.NoError(t, ctx.Err(), "the stream ran out of time")
	starts := 0
	for _, p := range c.procs {
		starts += p.starts
	}
	t.Logf("replicas: %d on %s; SIGKILL points: %d; starts: %d; deliveries sent: %d", replicas, dialect, kills, starts, seq)

	// Let it finish: complete what it dispatches until every head shows its
	// verdict. The longest wait is a job the faults failed many times: it
	// waits out its backoff, at most 5 minutes and a quarter of jitter (bot's
	// retryPolicy), 6m15s; what it then sets off are new jobs, which the
	// faults no longer fail. The 10 minutes leave the rest for those jobs on
	// a loaded machine. A job whose replica was killed while it ran does not
	// wait for River's rescuer (state's RescueAfter, 5 minutes): every killed
	// replica is started again at once and takes back its own jobs as it
	// starts (state.Store.Start).
	gh.SetFaults(nil)
	finishing := time.Now()
	if !assert.Eventually(t, func() bool {
		completeDispatches()
		return len(unfinished(gh, heads)) == 0
	}, 10*time.Minute, 200*time.Millisecond, "every head ends with its verdict") {
		t.Fatalf("not done:\n%s\nlog: %s", strings.Join(unfinished(gh, heads), "\n"), tail(logFile.Name()))
	}
	t.Logf("every head showed its verdict %s after the faults stopped", time.Since(finishing).Round(time.Second))

	runs := gh.CheckRuns(crashRepo)
	byExternal := map[string]int{}
	for _, cr := range runs {
		byExternal[cr.ExternalID]++
		assert.Equal(t, "completed", cr.Status, "check run %d (%s) left %s", cr.ID, cr.ExternalID, cr.Status)
	}
	for ext, n := range byExternal {
		assert.Equal(t, 1, n, "run %s has %d check runs", ext, n)
	}
	dispatched := map[string]int{}
	for _, d := range gh.Dispatches(crashRepo) {
		dispatched[d.Inputs["head_sha"].(string)]++
	}
	for sha, n := range dispatched {
		assert.Equal(t, 1, n, "commit %s dispatched %d times", sha, n)
	}
	for pr, sha := range heads {
		assert.Equal(t, 1, dispatched[sha], "PR #%d's head %s benched once", pr, sha)
		want := "bench: " + string(verdictOf(sha))
		assert.Equal(t, []string{want}, gh.IssueLabels(crashRepo, pr), "PR #%d's label is its head's verdict", pr)
	}
	t.Logf("check runs: %d; dispatches: %d; kills: %d", len(runs), len(gh.Dispatches(crashRepo)), kills)
	assert.GreaterOrEqual(t, kills, *serveKills)

	// A clean stop to end with.
	for _, p := range c.procs {
		require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	}
	for _, p := range c.procs {
		select {
		case <-p.exited:
		case <-time.After(20 * time.Second):
			t.Fatal("serve did not stop on SIGTERM")
		}
	}
}

// unfinished lists what is not yet as it should end: a check run left
// open, or a pull request whose head does not show its own verdict in its
// check run, its label and its rollup's headline. Empty when all is done.
func unfinished(gh *githubtest.Server, heads map[int]string) []string {
	var out []string
	runs := gh.CheckRuns(crashRepo)
	for _, cr := range runs {
		if cr.Status != "completed" {
			out = append(out, fmt.Sprintf("check run %d (%s, %s) is %s", cr.ID, cr.ExternalID, cr.HeadSHA[:7], cr.Status))
		}
	}
	for pr, sha := range heads {
		want := "bench: " + string(verdictOf(sha))
		ok := false
		for _, cr := range runs {
			// The title names the arms after the verdict ("bench: faster ·
			// this PR's tools … against main@…'s tools").
			if cr.HeadSHA == sha && (cr.Title == want || strings.HasPrefix(cr.Title, want+" · ")) {
				ok = true
			}
		}
		if !ok {
			out = append(out, fmt.Sprintf("PR #%d: no check run of head %s titled %q", pr, sha[:7], want))
		}
		if labels := gh.IssueLabels(crashRepo, pr); len(labels) != 1 || labels[0] != want {
			out = append(out, fmt.Sprintf("PR #%d: labels %q, want [%q]", pr, labels, want))
		}
		var rollups []string
		for _, c := range gh.Comments(crashRepo, pr) {
			if strings.HasPrefix(c.Body, "<!-- pairbench:rollup -->\n") {
				rollups = append(rollups, c.Body)
			}
		}
		switch {
		case len(rollups) != 1:
			out = append(out, fmt.Sprintf("PR #%d: %d rollup comments, want 1", pr, len(rollups)))
		default:
			// The heading names the head commit and the first line under it is
			// the head's verdict (its report's verdict line).
			lines := strings.SplitN(rollups[0], "\n", 5)
			heading, verdict := "### pairbench: "+sha[:7]+" (run `", "**pairbench verdict: "+string(verdictOf(sha))+"**"
			if len(lines) < 4 || !strings.HasPrefix(lines[1], heading) || !strings.HasPrefix(lines[3], verdict) {
				out = append(out, fmt.Sprintf("PR #%d: the rollup's headline is not head %s's verdict %q: %q", pr, sha[:7], verdict, lines[:min(len(lines), 4)]))
			}
		}
	}
	return out
}

func repoJSON() map[string]any {
	return map[string]any{"name": "registry", "full_name": crashRepo, "owner": map[string]any{"login": "octo"}, "default_branch": "main"}
}

func pullEvent(pr int, sha, action string) []byte {
	return mustMarshal(nil, map[string]any{
		"action": action, "number": pr,
		"pull_request": map[string]any{"number": pr, "state": "open", "draft": false, "author_association": "OWNER",
			"updated_at": time.Now().UTC().Format(time.RFC3339),
			"head":       map[string]any{"sha": sha, "ref": fmt.Sprint("change-", pr), "repo": map[string]any{"full_name": crashRepo, "fork": false}},
			"base":       map[string]any{"ref": "main", "repo": map[string]any{"full_name": crashRepo}}},
		"repository": repoJSON(), "installation": map[string]any{"id": 1},
	})
}

// commentIDs numbers commentEvent's comments: each comment on GitHub has an
// id of its own, and the service carries out a comment's command once.
var commentIDs atomic.Int64

func commentEvent(pr int, body string) []byte {
	return mustMarshal(nil, map[string]any{
		"action": "created",
		"issue":  map[string]any{"number": pr, "pull_request": map[string]any{"url": "x"}},
		"comment": map[string]any{"id": 1000 + commentIDs.Add(1), "body": body, "created_at": time.Now().UTC().Format(time.RFC3339),
			"user": map[string]any{"login": "maintainer", "type": "User"}},
		"repository": repoJSON(), "installation": map[string]any{"id": 1},
	})
}

func mustMarshal(t *testing.T, v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// storeReport writes a run's report.json (the bot's test report with the
// verdict) and report.html into the directory store, as a workflow would.
func storeReport(t *testing.T, store, run string, verdict pairbench.Label) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, "bot", "testdata", "report.json"))
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	m["verdict"], m["run_id"] = string(verdict), run
	require.NoError(t, os.MkdirAll(filepath.Join(store, run), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(store, run, "report.json"), mustMarshal(t, m), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(store, run, "report.html"), []byte("<html></html>"), 0o644))
}

// TestServeStatusCancelAndPushAfterKill9: the service is killed with
// SIGKILL while a bench runs on Actions, and again later; each time the
// restarted service still knows the running bench: /bench status names it,
// a push supersedes it (its check run ends superseded and its workflow run
// is cancelled), and /bench cancel cancels the new one.
func TestServeStatusCancelAndPushAfterKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and restarts the service; skipped with -short")
	}
	t.Parallel() // as serveCrash
	bin := clitest.Build(t)
	gh := githubtest.New(t)
	appID, keyPEM := clitest.App(t, gh)
	sha1, sha2 := fmt.Sprintf("%040x", 0xa1), fmt.Sprintf("%040x", 0xb2)
	gh.Repo(crashRepo, func(r *githubtest.Repo) {
		r.DefaultBranch = "main"
		r.Files["main"], r.Files[sha1], r.Files[sha2] = crashRegistry(), crashRegistry(), crashRegistry()
		r.Pulls[1] = &githubtest.Pull{Number: 1, HeadSHA: sha1, HeadRef: "change-1", Files: []string{"domains/books.example/tools/find_books.js"}}
		r.Permissions["maintainer"] = "write"
	})
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "app.pem")
	require.NoError(t, os.WriteFile(keyFile, keyPEM, 0o600))
	logFile, err := os.Create(filepath.Join(dir, "serve.log"))
	require.NoError(t, err)
	defer logFile.Close()
	secret := []byte("status-secret")
	p := &serveProc{t: t, bin: bin, addr: freeAddr(t), log: logFile, env: append(os.Environ(), "PAIRBENCH_WEBHOOK_SECRET="+string(secret)),
		args: []string{"--app-id", strconv.FormatInt(appID, 10), "--private-key-file", keyFile, "--api-url", gh.URL,
			"--store", t.TempDir(), "--dispatch", "actions", "--state-dir", filepath.Join(dir, "state"), "--log-format", "json"}}
	p.start()
	defer func() {
		if p.cmd.ProcessState == nil {
			p.kill()
		}
	}()
	c := &cluster{procs: []*serveProc{p}}
	n := 0
	send := func(event string, body []byte) {
		n++
		require.Equal(t, http.StatusAccepted, c.post(t.Context(), secret, event, fmt.Sprint("d-", n), body))
	}
	eventually := func(what string, cond func() bool) {
		t.Helper()
		require.Eventually(t, cond, time.Minute, 100*time.Millisecond, "%s; log: %s", what, tail(logFile.Name()))
	}
	checkOf := func(sha string) githubtest.CheckRun {
		for _, cr := range gh.CheckRuns(crashRepo) {
			if cr.HeadSHA == sha {
				return cr
			}
		}
		return githubtest.CheckRun{}
	}
	replied := func(text string) func() bool {
		return func() bool {
			for _, cm := range gh.Comments(crashRepo, 1) {
				if strings.Contains(cm.Body, text) {
					return true
				}
			}
			return false
		}
	}

	send("pull_request", pullEvent(1, sha1, "opened"))
	eventually("the bench of the head runs on Actions", func() bool { return checkOf(sha1).Status == "in_progress" })
	first := gh.Dispatches(crashRepo)[0]
	p.kill()
	p.start()

	send("issue_comment", commentEvent(1, "/bench status"))
	eventually("status names the running bench", replied(fmt.Sprintf("Run `%s` is benching %s", first.Inputs["run_id"], sha1[:7])))

	gh.Repo(crashRepo, func(r *githubtest.Repo) { r.Pulls[1].HeadSHA = sha2 })
	send("pull_request", pullEvent(1, sha2, "synchronize"))
	eventually("the push supersedes the bench", func() bool {
		cr := checkOf(sha1)
		var cancelled []int64
		gh.Repo(crashRepo, func(r *githubtest.Repo) { cancelled = r.Cancelled })
		return cr.Status == "completed" && cr.Conclusion == "cancelled" && cr.Title == "superseded" &&
			slices.Contains(cancelled, first.RunID) && checkOf(sha2).Status == "in_progress"
	})
	second := gh.Dispatches(crashRepo)[1]
	p.kill()
	p.start()

	send("issue_comment", commentEvent(1, "/bench cancel"))
	eventually("cancel cancels the running bench", func() bool {
		cr := checkOf(sha2)
		return replied(fmt.Sprintf("Cancelled run `%s`", second.Inputs["run_id"]))() && cr.Status == "completed" && cr.Conclusion == "cancelled"
	})
	assert.Len(t, gh.Dispatches(crashRepo), 2, "nothing benched twice")
	assert.Len(t, gh.CheckRuns(crashRepo), 2)

	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case <-p.exited:
	case <-time.After(20 * time.Second):
		t.Fatal("serve did not stop on SIGTERM")
	}
}
