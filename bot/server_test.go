package bot_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench/bot"
	"github.com/pairbench/pairbench/server"
)

// TestSignedDeliveriesThroughServer sends signed community payloads to
// the real webhook server wired to the bot, as cmd/pairbench wires them:
// each is stored before it is answered, a redelivery is a duplicate.
func TestSignedDeliveriesThroughServer(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	secret := []byte("webhook-secret")
	srv, err := server.New(server.Config{
		Secret: secret,
		Events: bot.Events(),
		Inbox: server.InboxFunc(func(ctx context.Context, d server.Delivery) (bool, error) {
			return f.bot.Accept(ctx, bot.Delivery(d))
		}),
	})
	require.NoError(t, err)
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)

	post := func(event, id string, body []byte, key []byte) int {
		req, err := http.NewRequest(http.MethodPost, ts.URL+"/webhook", bytes.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-GitHub-Event", event)
		req.Header.Set("X-GitHub-Delivery", id)
		req.Header.Set("X-Hub-Signature-256", server.Sign(key, body))
		resp, err := ts.Client().Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	opened := payload(t, "pull_request.opened.json", nil)
	assert.Equal(t, http.StatusUnauthorized, post("pull_request", "d1", opened, []byte("wrong")))
	assert.Equal(t, http.StatusAccepted, post("pull_request", "d2", opened, secret))
	assert.Equal(t, http.StatusOK, post("pull_request", "d2", opened, secret), "a redelivery is a duplicate")
	assert.Equal(t, http.StatusAccepted, post("installation", "d3", payload(t, "installation.created.json", nil), secret))
	require.Eventually(t, func() bool { return len(f.gh.CheckRuns(repoName)) == 1 }, 10*time.Second, 10*time.Millisecond)
	f.settle(t)
	assert.Len(t, f.benches(t), 1, "the signed delivery was handled once")
}
