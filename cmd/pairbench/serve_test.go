package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench/server"
	"github.com/pairbench/pairbench/service"
)

// validServeOptions are options service.Options.Check accepts, with the state in a
// directory of the test's own.
func validServeOptions(t *testing.T) serveOptions {
	return serveOptions{Options: service.Options{
		SecretEnv: "SECRET", TokenEnv: "TOKEN", Store: "runs", Dispatch: "actions",
		Workers: 1, ShutdownTimeout: time.Second, StateDir: t.TempDir(), ReplicaID: "test", RunTimeout: time.Hour, QueueTimeout: time.Hour,
	}}
}

func TestServeRefusesToStartWithoutASecret(t *testing.T) {
	t.Setenv("PAIRBENCH_WEBHOOK_SECRET", "")
	var stdout, stderr bytes.Buffer
	code := run([]string{"serve", "--token-env", "HOME", "--store", t.TempDir()}, strings.NewReader(""), &stdout, &stderr)
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, stderr.String(), "refuses to run without a webhook secret")
}

// failingGitHub answers every REST call with 500 and a rate-limit header, and
// counts the calls.
func failingGitHub(t *testing.T) (string, *atomic.Int64) {
	calls := &atomic.Int64{}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.Header().Set("X-RateLimit-Remaining", "4321")
		http.Error(w, `{"message":"unavailable"}`, http.StatusInternalServerError)
	}))
	t.Cleanup(ts.Close)
	return ts.URL, calls
}

func TestServeWiresServerAndBot(t *testing.T) {
	api, calls := failingGitHub(t)
	o := validServeOptions(t)
	o.Store, o.APIURL, o.Workers = t.TempDir(), api, 2
	secret := []byte("webhook-secret")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	base := "http://" + l.Addr().String()

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- runServe(ctx, o, service.Secrets{Webhook: secret, Token: "ghs_test"}, l, slog.New(slog.DiscardHandler))
	}()

	post := func(event, id string, body []byte, key []byte) int {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, base+"/webhook", bytes.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-GitHub-Event", event)
		req.Header.Set("X-GitHub-Delivery", id)
		req.Header.Set("X-Hub-Signature-256", server.Sign(key, body))
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	get := func(path string) (int, string) {
		resp, err := http.Get(base + path)
		require.NoError(t, err)
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}

	code, _ := get("/healthz")
	require.Equal(t, http.StatusOK, code)
	assert.Equal(t, http.StatusOK, post("ping", "p1", []byte(`{"zen":"Design for failure."}`), secret))
	assert.Equal(t, http.StatusUnauthorized, post("ping", "p2", []byte(`{}`), []byte("wrong")))

	// A pull request opened by the repository's owner makes the bot call
	// GitHub, through the metrics transport, at the fake.
	opened, err := os.ReadFile(filepath.Join("..", "..", "bot", "testdata", "webhooks", "pull_request.opened.json"))
	require.NoError(t, err)
	assert.Equal(t, http.StatusAccepted, post("pull_request", "pr1", opened, secret))
	require.Eventually(t, func() bool {
		_, m := get("/metrics")
		return strings.Contains(m, `pairbench_webhook_deliveries_total{event="pull_request",result="stored"} 1`) &&
			strings.Contains(m, `pairbench_github_api_calls_total{code="500",operation="GET /repos/{owner}/{repo}/pulls/{pull_number}"}`)
	}, 2*time.Minute, 20*time.Millisecond, "the bot stores the delivery and its job meets the fake's 500 (and will retry)")
	assert.Positive(t, calls.Load(), "the bot called the GitHub API root given by --api-url")

	_, m := get("/metrics")
	assert.Contains(t, m, `pairbench_webhook_deliveries_total{event="ping",result="ping"} 1`)
	assert.Contains(t, m, `pairbench_github_rate_limit_remaining{installation="0"} 4321`)
	assert.Regexp(t, `pairbench_github_api_calls_total\{code="500",operation="GET /repos/\{owner\}/\{repo\}/pulls/\{pull_number\}"\} [1-9]`, m)
	assert.NotContains(t, m, "Hello-World", "a call is counted by its route, never its path")

	cancel()
	select {
	case err := <-done:
		assert.NoError(t, err, "a clean shutdown")
	case <-time.After(2 * time.Minute):
		t.Fatal("runServe did not return after its context ended")
	}
	_, err = http.Get(base + "/healthz")
	assert.Error(t, err, "nothing listens after shutdown")
}

func TestServeFailsOnAMissingBucketBeforeListening(t *testing.T) {
	o := validServeOptions(t)
	o.Store = "s3://no-such-bucket?endpoint=http://127.0.0.1:1&path_style=true"
	t.Setenv("AWS_ACCESS_KEY_ID", "x")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "y")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	err = runServe(t.Context(), o, service.Secrets{Webhook: []byte("s"), Token: "t"}, l, slog.New(slog.DiscardHandler))
	require.Error(t, err)
	var ue usageError
	assert.False(t, errors.As(err, &ue), "an unreachable store is not a usage error")
}

// TestServeBrowserFlagErrorsExitTwo: serve takes the local backend's
// browser provider as run does, and refuses the same mistakes before it
// listens.
func TestServeBrowserFlagErrorsExitTwo(t *testing.T) {
	t.Setenv("PAIRBENCH_WEBHOOK_SECRET", "s3cret")
	t.Setenv("KERNEL_API_KEY", "")
	for args, want := range browserFlagMistakes {
		code, _, stderr := runCLI(t, append([]string{"serve", "--token-env", "HOME", "--store", t.TempDir(),
			"--state-dir", t.TempDir(), "--addr", "127.0.0.1:0"}, strings.Fields(args)...)...)
		assert.Equal(t, exitUsage, code, "%s: %s", args, stderr)
		assert.Contains(t, stderr, want, args)
	}
}
