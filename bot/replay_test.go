package bot_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench/bot/githubtest"
	"github.com/pairbench/pairbench/state"
)

// TestAReplayedRunLeavesTheRunningBench: a maintainer's /bench run is
// delivered again under another delivery id (an operator's bulk
// redelivery after an outage). The comment's command was carried out: the
// running bench is neither superseded nor dispatched again, and nothing is
// replied twice.
func TestAReplayedRunLeavesTheRunningBench(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	body := commentPayload(t, writer, "/bench run", time.Now())
	f.deliver(t, "issue_comment", body)
	require.Len(t, f.benches(t), 1)
	run := f.benches(t)[0].Run
	replies := len(f.gh.Comments(repoName, prNumber))
	f.deliver(t, "issue_comment", body)
	benches := f.benches(t)
	require.Len(t, benches, 1, "no second bench")
	assert.Equal(t, run, benches[0].Run)
	assert.False(t, benches[0].Over(), benches[0].State)
	assert.Len(t, f.gh.Comments(repoName, prNumber), replies, "no second reply")
	assert.Len(t, f.runner.Runs(), 1, "not run again")
}

// TestACancelOlderThanTheBenchIsIgnored: a /bench cancel written before
// the running bench was recorded arrives late (a delayed or replayed
// delivery). The bench goes on, and the reply says why.
func TestACancelOlderThanTheBenchIsIgnored(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	written := time.Now().Add(-time.Minute)
	f.opened(t, nil)
	run := f.benches(t)[0].Run
	f.deliver(t, "issue_comment", commentPayload(t, writer, "/bench cancel", written))
	assert.Equal(t, state.BenchRunning, f.benches(t)[0].State)
	comments := f.gh.Comments(repoName, prNumber)
	require.NotEmpty(t, comments)
	assert.Contains(t, comments[len(comments)-1].Body, "started after your `/bench cancel` was written")

	// A cancel written now stops it.
	f.comment(t, writer, "/bench cancel")
	f.waitBench(t, run, state.BenchCancelled)
}

// TestALateRunDoesNotSupersedeANewerBenchOfItsCommit: a /bench run written
// before the head's automatic bench started arrives late: that bench
// answers it, and goes on.
func TestALateRunDoesNotSupersedeANewerBenchOfItsCommit(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	written := time.Now().Add(-time.Minute)
	f.opened(t, nil)
	run := f.benches(t)[0].Run
	f.deliver(t, "issue_comment", commentPayload(t, writer, "/bench run", written))
	benches := f.benches(t)
	require.Len(t, benches, 1)
	assert.Equal(t, run, benches[0].Run)
	comments := f.gh.Comments(repoName, prNumber)
	require.NotEmpty(t, comments)
	assert.Contains(t, comments[len(comments)-1].Body, "started after your comment, is benching")
}

// TestAnUnknownForksApprovalNamesItsCommit: a maintainer's /bench run on a
// fork's pull request the service has no record of (its webhooks predate
// the installation, or were lost) cannot say which commit was reviewed:
// it is refused with a reply asking for /bench run @<sha>, which benches
// that commit. It used to bench whatever the head was.
func TestAnUnknownForksApprovalNamesItsCommit(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.gh.Repo(repoName, func(r *githubtest.Repo) { r.Pulls[prNumber].Fork = "stranger/Hello-World" })
	f.comment(t, writer, "/bench run")
	assert.Empty(t, f.benches(t))
	comments := f.gh.Comments(repoName, prNumber)
	require.Len(t, comments, 1)
	assert.Contains(t, comments[0].Body, "comment `/bench run @<sha>` with its full SHA (the head is `"+headSHA+"`)")

	f.comment(t, writer, "/bench run @"+headSHA)
	require.Len(t, f.benches(t), 1)
	assert.Equal(t, headSHA, f.benches(t)[0].SHA)
}
