package service

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"log/slog"
	"maps"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench/bot/githubtest"
)

// TestActionsBackendQuotesRegistryProblemsWithoutDispatching: with the
// Actions backend, serve reads a pull request's registry at its head
// through the contents API and checks it as a run would. A registry with
// problems is never dispatched (no runner is taken): the bench fails, and
// the check run and the sticky comment quote each problem by its file in
// the repository and its line. The example registry, which has none, is
// dispatched as before.
func TestActionsBackendQuotesRegistryProblemsWithoutDispatching(t *testing.T) {
	const (
		repoName = "Codertocat/Hello-World"
		badSHA   = "ec26c3e57ca3a959ca5aad62de7213c562f8c821"
		goodSHA  = "2222222222222222222222222222222222222222"
		emptySHA = "3333333333333333333333333333333333333333" // an empty .pairbench.yml: every default
		intent   = "bench/intents/weather.example/weather-high-oslo.yaml"
	)
	good, err := githubtest.TreeFiles(os.DirFS("../examples/registry"))
	require.NoError(t, err)
	good[".github/workflows/pairbench.yml"] = "name: pairbench\n"
	bad := maps.Clone(good)
	bad[intent] += "colour: blue\n"
	empty := maps.Clone(good)
	empty[".pairbench.yml"] = ""

	gh := githubtest.New(t)
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	gh.AddApp(4242, &key.PublicKey)
	gh.Repo(repoName, func(r *githubtest.Repo) {
		r.DefaultBranch = "master"
		r.Files["master"], r.Files[badSHA], r.Files[goodSHA], r.Files[emptySHA] = good, bad, good, empty
		r.Pulls[4] = &githubtest.Pull{Number: 4, HeadSHA: emptySHA, HeadRef: "empty-config", Files: []string{intent}}
		r.Pulls[2] = &githubtest.Pull{Number: 2, HeadSHA: badSHA, HeadRef: "broken", Files: []string{intent}}
		r.Pulls[3] = &githubtest.Pull{Number: 3, HeadSHA: goodSHA, HeadRef: "fine", Files: []string{intent}}
		r.Permissions["Codertocat"] = "admin"
	})

	o := validOptions(t)
	o.TokenEnv, o.AppID, o.Dispatch, o.Store, o.APIURL = "", 4242, "actions", t.TempDir(), gh.URL
	secret := []byte("actions-secret")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan error, 1)
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	go func() {
		done <- Run(ctx, o, Secrets{Webhook: secret, PrivateKey: keyPEM}, l, slog.New(slog.DiscardHandler))
	}()

	for pr, sha := range map[int]string{2: badSHA, 3: goodSHA, 4: emptySHA} {
		deliverPullRequestOpened(t, "http://"+l.Addr().String(), secret, pr, sha)
	}
	require.Eventually(t, func() bool {
		return len(gh.Comments(repoName, 2)) > 0 && len(gh.Dispatches(repoName)) > 1
	}, time.Minute, 100*time.Millisecond, "the broken registry's bench fails and comments; the others are dispatched")

	ds := gh.Dispatches(repoName)
	require.Len(t, ds, 2, "only the registries without problems take a runner")
	assert.ElementsMatch(t, []any{"3", "4"}, []any{ds[0].Inputs["pr"], ds[1].Inputs["pr"]}, "an empty .pairbench.yml takes every default")
	var failed githubtest.CheckRun
	require.Eventually(t, func() bool {
		for _, r := range gh.CheckRuns(repoName) {
			if r.HeadSHA == badSHA && r.Status == "completed" {
				failed = r
				return true
			}
		}
		return false
	}, time.Minute, 100*time.Millisecond, "the failed bench's check run completes")
	assert.Equal(t, "failure", failed.Conclusion)
	const problem = intent + `:`
	assert.Contains(t, failed.Summary, problem)
	assert.Contains(t, failed.Summary, `unknown field "colour"`)
	comments := gh.Comments(repoName, 2)
	require.Len(t, comments, 1)
	assert.Contains(t, comments[0].Body, problem, "the comment names the file in the repository and its line")
	assert.Contains(t, comments[0].Body, `unknown field "colour"`)
	assert.Contains(t, comments[0].Body, "\n> - `"+intent+":", "one problem a line, as a list")
	assert.NotContains(t, comments[0].Body, "try again", "a re-run of the commit cannot help")
	assert.Empty(t, gh.Comments(repoName, 3), "the dispatched bench has no verdict yet")
	assert.Empty(t, gh.Comments(repoName, 4), "nor has the one with an empty configuration")

	cancel()
	select {
	case err := <-done:
		assert.NoError(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop")
	}
}

// deliverPullRequestOpened posts GitHub's example pull_request opened
// delivery, for pull request pr at head sha, signed with secret, to the
// service at base.
func deliverPullRequestOpened(t *testing.T, base string, secret []byte, pr int, sha string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "bot", "testdata", "webhooks", "pull_request.opened.json"))
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	m["number"] = pr
	p := m["pull_request"].(map[string]any)
	p["number"] = pr
	p["head"].(map[string]any)["sha"] = sha
	body, err := json.Marshal(m)
	require.NoError(t, err)
	githubtest.MustDeliver(t, base+"/webhook", secret, "pull_request", "opened-"+sha, body)
}
