package githubtest_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"net/http"
	"net/url"
	"testing"

	"github.com/bradleyfalzon/ghinstallation/v2"
	"github.com/google/go-github/v66/github"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench/bot"
	"github.com/pairbench/pairbench/bot/githubtest"
)

const appID = 4242

// newApp registers an app with a fresh key and returns the key as PEM.
func newApp(t *testing.T, gh *githubtest.Server) []byte {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	gh.AddApp(appID, &key.PublicKey)
	return pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
}

func TestAppTokenThenInstallationCall(t *testing.T) {
	gh := githubtest.New(t)
	keyPEM := newApp(t, gh)
	gh.Repo("o/r", func(r *githubtest.Repo) {
		r.Pulls[7] = &githubtest.Pull{Number: 7, HeadSHA: "abc"}
	})
	clients, err := bot.NewAppClients(appID, keyPEM, gh.URL, nil)
	require.NoError(t, err)
	c, err := clients.Client(context.Background(), 99)
	require.NoError(t, err)

	pr, _, err := c.PullRequests.Get(context.Background(), "o", "r", 7)
	require.NoError(t, err)
	assert.Equal(t, "abc", pr.GetHead().GetSHA())

	calls := gh.Calls()
	require.Len(t, calls, 2)
	assert.Equal(t, "apps/create-installation-access-token", calls[0].Operation)
	assert.Equal(t, githubtest.AuthApp, calls[0].Auth)
	assert.Equal(t, "/app/installations/99/access_tokens", calls[0].Path)
	assert.Equal(t, "pulls/get", calls[1].Operation)
	assert.Equal(t, githubtest.AuthInstallation, calls[1].Auth)
}

// TestNullTokenBodyRefused shows the pitfall the field notes describe:
// ghinstallation's default token request body, null, is not what GitHub's
// description allows, and the fake refuses it.
func TestNullTokenBodyRefused(t *testing.T) {
	gh := githubtest.New(t)
	keyPEM := newApp(t, gh)
	itr, err := ghinstallation.New(http.DefaultTransport, appID, 5, keyPEM)
	require.NoError(t, err)
	itr.BaseURL = gh.URL
	_, err = itr.Token(context.Background())
	require.Error(t, err)
	v := gh.TakeViolations()
	require.Len(t, v, 1)
	assert.Contains(t, v[0], "create-installation-access-token")
}

func TestWrongKeyRefused(t *testing.T) {
	gh := githubtest.New(t)
	newApp(t, gh)
	other, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	otherPEM := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(other)})
	clients, err := bot.NewAppClients(appID, otherPEM, gh.URL, nil)
	require.NoError(t, err)
	c, err := clients.Client(context.Background(), 1)
	require.NoError(t, err)
	_, _, err = c.PullRequests.Get(context.Background(), "o", "r", 1)
	require.Error(t, err)
	v := gh.TakeViolations()
	require.Len(t, v, 1)
	assert.Contains(t, v[0], "signature")
}

func tokenClient(t *testing.T, gh *githubtest.Server) *github.Client {
	t.Helper()
	gh.AddToken("plain-token")
	c, err := bot.NewTokenClient("plain-token", gh.URL, nil)
	require.NoError(t, err)
	return c
}

func TestUnknownEndpointRefused(t *testing.T) {
	gh := githubtest.New(t)
	c := tokenClient(t, gh)
	gh.Repo("o/r", func(*githubtest.Repo) {})
	_, resp, err := c.Repositories.Get(context.Background(), "o", "r")
	require.Error(t, err)
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
	v := gh.TakeViolations()
	require.Len(t, v, 1)
	assert.Contains(t, v[0], "unknown endpoint")
}

func TestInvalidRequestRefused(t *testing.T) {
	gh := githubtest.New(t)
	c := tokenClient(t, gh)
	gh.Repo("o/r", func(*githubtest.Repo) {})
	bogus := "bogus"
	_, _, err := c.Repositories.CreateStatus(context.Background(), "o", "r", "abc", &github.RepoStatus{State: &bogus})
	require.Error(t, err)
	v := gh.TakeViolations()
	require.Len(t, v, 1)
	assert.Contains(t, v[0], "does not match GitHub's description")
	assert.Empty(t, gh.Statuses("o/r", "abc"), "a refused request changes nothing")
}

// TestTokensCannotWriteCheckRuns: as on GitHub, only an App may.
func TestTokensCannotWriteCheckRuns(t *testing.T) {
	gh := githubtest.New(t)
	c := tokenClient(t, gh)
	gh.Repo("o/r", func(*githubtest.Repo) {})
	_, _, err := c.Checks.CreateCheckRun(context.Background(), "o", "r", github.CreateCheckRunOptions{Name: "x", HeadSHA: "abc"})
	require.Error(t, err)
	v := gh.TakeViolations()
	require.Len(t, v, 1)
	assert.Contains(t, v[0], "only GitHub Apps may write check runs")
}

func TestNoCredentialsRefused(t *testing.T) {
	gh := githubtest.New(t)
	gh.Repo("o/r", func(*githubtest.Repo) {})
	c := github.NewClient(nil)
	c.BaseURL, _ = url.Parse(gh.URL + "/")
	_, _, err := c.PullRequests.Get(context.Background(), "o", "r", 1)
	require.Error(t, err)
	require.Len(t, gh.TakeViolations(), 1)
}

func TestContentsAndPagination(t *testing.T) {
	gh := githubtest.New(t)
	c := tokenClient(t, gh)
	files := make([]string, 250)
	for i := range files {
		files[i] = "f" + string(rune('a'+i%26))
	}
	gh.Repo("o/r", func(r *githubtest.Repo) {
		r.Files["sha1"] = map[string]string{"a/b/c.yaml": "id: x\n", "a/b/d.yaml": "id: y\n", "a/e": "z"}
		r.Pulls[1] = &githubtest.Pull{Number: 1, Files: files}
	})
	ctx := context.Background()
	f, _, _, err := c.Repositories.GetContents(ctx, "o", "r", "a/b/c.yaml", &github.RepositoryContentGetOptions{Ref: "sha1"})
	require.NoError(t, err)
	content, err := f.GetContent()
	require.NoError(t, err)
	assert.Equal(t, "id: x\n", content)

	_, dir, _, err := c.Repositories.GetContents(ctx, "o", "r", "a", &github.RepositoryContentGetOptions{Ref: "sha1"})
	require.NoError(t, err)
	require.Len(t, dir, 2)
	assert.Equal(t, "dir", dir[0].GetType())
	assert.Equal(t, "a/b", dir[0].GetPath())
	assert.Equal(t, "file", dir[1].GetType())

	_, _, resp, err := c.Repositories.GetContents(ctx, "o", "r", "missing", &github.RepositoryContentGetOptions{Ref: "sha1"})
	require.Error(t, err)
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)

	var got int
	opts := &github.ListOptions{PerPage: 100}
	for pages := 0; ; pages++ {
		require.Less(t, pages, 5)
		fs, resp, err := c.PullRequests.ListFiles(ctx, "o", "r", 1, opts)
		require.NoError(t, err)
		got += len(fs)
		if resp.NextPage == 0 {
			break
		}
		opts.Page = resp.NextPage
	}
	assert.Equal(t, 250, got)
	assert.Empty(t, gh.TakeViolations())
}
