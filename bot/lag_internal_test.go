package bot

import (
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench/bot/githubtest"
	"github.com/pairbench/pairbench/state"
)

// TestReadPullWaitsForALaggingAPIThenKeepsWhatTheServiceKnows: a read of
// another head, updated before the service knew its head, is refused as
// lagging while the delivery is young, and taken as lagging (the caller
// keeps what it knows) once lagPatience has passed. A read updated since
// is taken as it is: the pull request moved on.
func TestReadPullWaitsForALaggingAPIThenKeepsWhatTheServiceKnows(t *testing.T) {
	t.Parallel()
	const oldSHA, newSHA = "1111111111111111111111111111111111111111", "2222222222222222222222222222222222222222"
	gh := githubtest.New(t)
	gh.AddToken("ghs_lag")
	known := time.Now()
	gh.Repo("o/r", func(r *githubtest.Repo) {
		r.Pulls[1] = &githubtest.Pull{Number: 1, HeadSHA: oldSHA, HeadRef: "x", Updated: known.Add(-time.Hour)}
	})
	c, err := NewTokenClient("ghs_lag", gh.URL, nil)
	require.NoError(t, err)
	h := &handling{log: slog.New(slog.DiscardHandler), delivery: state.Delivery{ReceivedAt: time.Now()}}
	repo := Repo{Owner: "o", Name: "r"}

	_, _, err = h.readPull(t.Context(), c, repo, 1, newSHA, known)
	var lag *lagError
	require.ErrorAs(t, err, &lag)
	assert.GreaterOrEqual(t, lag.wait, time.Second)
	assert.LessOrEqual(t, lag.wait, 15*time.Second)

	h.delivery.ReceivedAt = time.Now().Add(-lagPatience - time.Second)
	pr, lagging, err := h.readPull(t.Context(), c, repo, 1, newSHA, known)
	require.NoError(t, err)
	assert.True(t, lagging, "after its patience the read is still older: what the service knows stands")
	assert.Equal(t, oldSHA, pr.GetHead().GetSHA())

	gh.Repo("o/r", func(r *githubtest.Repo) { r.Pulls[1].Updated = known.Add(time.Hour) })
	h.delivery.ReceivedAt = time.Now()
	pr, lagging, err = h.readPull(t.Context(), c, repo, 1, newSHA, known)
	require.NoError(t, err)
	assert.False(t, lagging, "a read updated since is the pull request moving on")
	assert.Equal(t, oldSHA, pr.GetHead().GetSHA())
}
