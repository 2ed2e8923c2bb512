package bot_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench/state"
)

// lagPullReads makes GitHub's API lag behind its webhooks: the next n
// answers to GET /pulls/<pr> are rewritten to show head sha, updated at
// updated, as a replica that has not caught up would. It returns how many
// reads it rewrote.
func (f *fixture) lagPullReads(t *testing.T, n int32, sha string, updated time.Time) *atomic.Int32 {
	var lagged atomic.Int32
	path := "/repos/" + repoName + "/pulls/" + strconv.Itoa(prNumber)
	f.changeAnswers(func(r *http.Request, resp *http.Response, err error) (*http.Response, error) {
		if err != nil || r.Method != http.MethodGet || r.URL.Path != path || lagged.Load() >= n {
			return resp, err
		}
		lagged.Add(1)
		var pr map[string]any
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NoError(t, json.Unmarshal(body, &pr))
		pr["head"].(map[string]any)["sha"] = sha
		pr["updated_at"] = updated.UTC().Format(time.RFC3339)
		body = mustJSON(t, pr)
		resp.Body, resp.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
		resp.Header.Del("Content-Length")
		return resp, nil
	})
	return &lagged
}

func (f *fixture) pullRecord(t *testing.T) state.Pull {
	t.Helper()
	var p state.Pull
	require.NoError(t, f.bot.State().View(context.Background(), func(tx *state.Tx) (err error) {
		p, _, err = tx.Pull(context.Background(), repoName, prNumber)
		return err
	}))
	return p
}

// TestAPushSeenBeforeTheAPICatchesUpIsBenched: GitHub delivers the push
// of otherSHA while GET /pulls/2 still shows the old head (twice). The
// bot reads again until the API catches up and benches the new head; on a
// lagging read it used to drop the push as stale for good.
func TestAPushSeenBeforeTheAPICatchesUpIsBenched(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.opened(t, nil)
	lagged := f.lagPullReads(t, 2, headSHA, time.Now().Add(-time.Hour))
	f.push(t, otherSHA, nil)
	assert.Equal(t, int32(2), lagged.Load(), "the lagging reads were made")
	benches := f.benches(t)
	require.Len(t, benches, 2, "the new head is benched")
	assert.Equal(t, otherSHA, benches[0].SHA)
	assert.False(t, benches[0].Over(), benches[0].State)
	assert.Equal(t, otherSHA, f.pullRecord(t).HeadSHA)
	assert.Equal(t, "cancelled", benches[1].State, "the old head's bench is superseded")
}

// TestARunAnsweredByALaggingAPIKeepsTheNewHead: after a push of otherSHA
// was recorded, a maintainer's /bench run is answered by a GET /pulls/2
// still showing the old head. The bot neither records the old head as
// current nor benches it: it waits for the API and benches the new head.
func TestARunAnsweredByALaggingAPIKeepsTheNewHead(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.opened(t, nil)
	time.Sleep(1100 * time.Millisecond) // updated_at has second precision
	f.push(t, otherSHA, nil)
	lagged := f.lagPullReads(t, 2, headSHA, time.Now().Add(-time.Hour))
	f.comment(t, writer, "/bench run")
	assert.Equal(t, int32(2), lagged.Load())
	assert.Equal(t, otherSHA, f.pullRecord(t).HeadSHA, "the head never moves back to the lagging read's")
	benches := f.benches(t)
	require.NotEmpty(t, benches)
	assert.Equal(t, otherSHA, benches[0].SHA)
	assert.Equal(t, "pr2-"+otherSHA, benches[0].Run[:len("pr2-"+otherSHA)])
	comments := f.gh.Comments(repoName, prNumber)
	require.NotEmpty(t, comments)
	assert.Contains(t, comments[len(comments)-1].Body, "benching `1111111`")
}
