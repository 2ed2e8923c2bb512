package bot_test

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/bot"
	"github.com/pairbench/pairbench/bot/githubtest"
	"github.com/pairbench/pairbench/state"
)

// openPRs opens pull requests 3.. on the fake and delivers each.
func openPRs(t *testing.T, f *fixture, n int) {
	for pr := 3; pr < 3+n; pr++ {
		f.gh.Repo(repoName, func(r *githubtest.Repo) {
			r.Pulls[pr] = &githubtest.Pull{Number: pr, HeadSHA: headSHA, HeadRef: "more",
				Files: []string{"domains/books.example/tools/find_books.js"}}
		})
		f.opened(t, map[string]any{"number": pr, "pull_request.number": pr})
	}
}

// TestASecondaryRateLimitLocksNobodyOut: GitHub answers the first check
// run with a secondary rate limit (403, Retry-After) and another with a 502
// and a connection reset. The jobs wait and retry; all five pull requests
// that follow are benched, none lost.
func TestASecondaryRateLimitLocksNobodyOut(t *testing.T) {
	t.Parallel()
	f := newFixture(t, actions)
	var creates atomic.Int32
	f.gh.SetFaults(func(r *http.Request) githubtest.Fault {
		if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/check-runs") {
			return githubtest.Fault{}
		}
		switch creates.Add(1) {
		case 1:
			return githubtest.Fault{Status: http.StatusForbidden, Header: http.Header{"Retry-After": {"1"}},
				Message:          "You have exceeded a secondary rate limit.",
				DocumentationURL: "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits"}
		case 3:
			return githubtest.Fault{Status: http.StatusBadGateway, Message: "Server Error"}
		case 4:
			return githubtest.Fault{Reset: true}
		}
		return githubtest.Fault{}
	})
	openPRs(t, f, 5)
	var got []int
	for _, cr := range f.gh.CheckRuns(repoName) {
		for pr := 3; pr < 8; pr++ {
			if strings.HasPrefix(cr.ExternalID, "pr"+strconv.Itoa(pr)+"-") {
				got = append(got, pr)
			}
		}
	}
	assert.ElementsMatch(t, []int{3, 4, 5, 6, 7}, got, "every pull request has its check run, once")
	assert.Len(t, f.gh.Dispatches(repoName), 5, "and was dispatched")
	assert.GreaterOrEqual(t, int(creates.Load()), 8, "the faulted creates were tried again")
}

// countingMetrics records what the bot counts.
type countingMetrics struct {
	mu     sync.Mutex
	gaveUp map[string]int
}

func (m *countingMetrics) Dispatched(string, string) {}
func (m *countingMetrics) GaveUp(kind string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.gaveUp == nil {
		m.gaveUp = map[string]int{}
	}
	m.gaveUp[kind]++
}

// TestAJobThatGivesUpEndsVisibly: GitHub never accepts the dispatch (500
// each time); after its last attempt the bench fails with the reason on its
// check run and in the rollup, and the metric counts it.
func TestAJobThatGivesUpEndsVisibly(t *testing.T) {
	t.Parallel()
	m := &countingMetrics{}
	f := newFixture(t, actions, func(c *bot.Config) {
		c.Metrics = m
		c.State.MaxAttempts = 2
	})
	f.gh.SetFaults(func(r *http.Request) githubtest.Fault {
		if strings.HasSuffix(r.URL.Path, "/dispatches") {
			return githubtest.Fault{Status: http.StatusInternalServerError, Message: "Server Error"}
		}
		return githubtest.Fault{}
	})
	f.opened(t, nil)
	bn := f.benches(t)[0]
	require.Equal(t, state.BenchFailed, bn.State)
	assert.Contains(t, bn.Reason, "gave up on this bench after 2 tries of its dispatch step")
	assert.Contains(t, bn.Reason, "500")
	runs := f.gh.CheckRuns(repoName)
	require.Len(t, runs, 1)
	assert.Equal(t, "failure", runs[0].Conclusion)
	assert.Contains(t, runs[0].Summary, "gave up")
	comments := f.gh.Comments(repoName, prNumber)
	require.Len(t, comments, 1)
	assert.Contains(t, comments[0].Body, "gave up")
	m.mu.Lock()
	assert.Equal(t, 1, m.gaveUp["dispatch"])
	m.mu.Unlock()
}

// TestALostAnswerMakesNoSecondCheckRun: GitHub creates the check run but
// the answer is lost (the connection resets after the write), and the next
// write for the bench comes from a newer job (the dispatch recorded the
// workflow run) before the first one is tried again. It finds the check run
// by its external id: one check run, completed, none left in progress.
func TestALostAnswerMakesNoSecondCheckRun(t *testing.T) {
	t.Parallel()
	f := newFixture(t, actions)
	var creates atomic.Int32
	f.gh.SetFaults(func(r *http.Request) githubtest.Fault {
		if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/check-runs") && creates.Add(1) == 1 {
			return githubtest.Fault{LostAnswer: true}
		}
		return githubtest.Fault{}
	})
	f.opened(t, nil)
	bn := f.benches(t)[0]
	f.storeReport(t, bot.RunID(bn.Run), pairbench.Better)
	f.completeWorkflow(t, bn.Run, "success")
	require.Equal(t, state.BenchDone, f.benches(t)[0].State)
	var runs []string
	for _, cr := range f.gh.CheckRuns(repoName) {
		runs = append(runs, fmt.Sprintf("%s %s %s", cr.ExternalID, cr.Status, cr.Conclusion))
	}
	assert.Equal(t, []string{bn.Run + " completed success"}, runs, "one check run for the bench")
	assert.GreaterOrEqual(t, int(creates.Load()), 1)
}

// TestALostAnswerMakesNoSecondRollup: GitHub posts the rollup comment but
// the answer is lost, and a reopen asks for the rollup again before the
// first job is tried again. The newer job finds the comment by its marker:
// one rollup.
func TestALostAnswerMakesNoSecondRollup(t *testing.T) {
	t.Parallel()
	f := newFixture(t, actions)
	var posts atomic.Int32
	f.gh.SetFaults(func(r *http.Request) githubtest.Fault {
		if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/comments") && posts.Add(1) == 1 {
			return githubtest.Fault{LostAnswer: true}
		}
		return githubtest.Fault{}
	})
	f.opened(t, nil)
	bn := f.benches(t)[0]
	f.storeReport(t, bot.RunID(bn.Run), pairbench.Better)
	var wf int64
	for _, b := range f.benches(t) {
		wf = b.WorkflowRunID
	}
	f.gh.CompleteWorkflowRun(repoName, wf, "success")
	// The workflow run ends the bench; its rollup's answer is lost, and the
	// job waits a second before it tries again. Meanwhile the pull request
	// is reopened, which shows the verdict again.
	f.accept(t, "workflow_run", workflowRunPayload(t, wf, bn.Run, "success"))
	require.Eventually(t, func() bool { return posts.Load() >= 1 }, 10*time.Second, time.Millisecond)
	f.accept(t, "pull_request", payload(t, "pull_request.opened.json", map[string]any{"action": "reopened"}))
	f.settle(t)

	var rollups int
	for _, c := range f.gh.Comments(repoName, prNumber) {
		if strings.HasPrefix(c.Body, "<!-- pairbench:rollup -->") {
			rollups++
		}
	}
	assert.Equal(t, 1, rollups, "one rollup comment")
	assert.Equal(t, []string{"bench: better"}, f.gh.IssueLabels(repoName, prNumber))
}

// TestALabelWriteCutShortIsRedone: the label's change is cut short after
// the old label was removed (GitHub fails adding the new one), and before
// it is tried again the head moves back to the commit whose label was
// removed. The records of what the pull request showed were forgotten when
// the write began, so the label is written again, not taken as shown.
func TestALabelWriteCutShortIsRedone(t *testing.T) {
	t.Parallel()
	f := newFixture(t, actions)
	f.opened(t, nil)
	first := f.benches(t)[0]
	f.storeReport(t, bot.RunID(first.Run), pairbench.Better)
	f.completeWorkflow(t, first.Run, "success")
	require.Equal(t, []string{"bench: better"}, f.gh.IssueLabels(repoName, prNumber))

	f.push(t, otherSHA, nil)
	second := f.benches(t)[0]
	require.Equal(t, otherSHA, second.SHA)
	f.storeReport(t, bot.RunID(second.Run), pairbench.Slower)
	var adds atomic.Int32
	f.gh.SetFaults(func(r *http.Request) githubtest.Fault {
		if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, fmt.Sprintf("/issues/%d/labels", prNumber)) && adds.Add(1) == 1 {
			return githubtest.Fault{Status: http.StatusBadGateway, Message: "Server Error"}
		}
		return githubtest.Fault{}
	})
	f.gh.CompleteWorkflowRun(repoName, second.WorkflowRunID, "success")
	f.accept(t, "workflow_run", workflowRunPayload(t, second.WorkflowRunID, second.Run, "success"))
	require.Eventually(t, func() bool { return adds.Load() >= 1 }, 10*time.Second, time.Millisecond)
	require.Empty(t, f.gh.IssueLabels(repoName, prNumber), "the old label was removed, the new one not added")

	f.push(t, headSHA, nil) // back to the first commit: its verdict stands
	assert.Equal(t, []string{"bench: better"}, f.gh.IssueLabels(repoName, prNumber))
}

// TestARevokedTokenIsMintedAgain: GitHub revokes the installation's token
// an hour before it expires (401 Bad credentials). The next request mints a
// new token and goes through: a /bench status is answered at once. The
// token used to be kept until its expiry, every job failing meanwhile.
func TestARevokedTokenIsMintedAgain(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.opened(t, nil)
	mints := len(f.gh.CallsTo("apps/create-installation-access-token"))
	f.gh.RevokeInstallationTokens(installID)
	f.comment(t, writer, "/bench status")
	comments := f.gh.Comments(repoName, prNumber)
	require.NotEmpty(t, comments)
	assert.Contains(t, comments[len(comments)-1].Body, "is benching")
	assert.Equal(t, mints+1, len(f.gh.CallsTo("apps/create-installation-access-token")), "one new token")
	unauthorized := 0
	for _, c := range f.gh.Calls() {
		if c.Status == http.StatusUnauthorized {
			unauthorized++
		}
	}
	assert.Equal(t, 1, unauthorized, "the revoked token was refused once, then replaced")
}
