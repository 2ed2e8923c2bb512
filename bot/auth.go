package bot

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"github.com/bradleyfalzon/ghinstallation/v2"
	"github.com/google/go-github/v66/github"
)

// DefaultBaseURL is GitHub.com's REST API.
const DefaultBaseURL = "https://api.github.com"

// Clients gives the GitHub client that acts in an installation of the app.
type Clients interface {
	// Client returns the client for installationID. Implementations cache
	// clients; installation tokens are refreshed as they expire.
	Client(ctx context.Context, installationID int64) (*github.Client, error)
}

// AppClients authenticates as a GitHub App: a JWT signed with the app's
// private key buys a token per installation, refreshed before it expires.
type AppClients struct {
	apps    *ghinstallation.AppsTransport
	baseURL string

	mu      sync.Mutex
	clients map[int64]*github.Client
}

// NewAppClients returns clients for the app appID whose PEM private key is
// privateKey. baseURL is the REST API root ("" means DefaultBaseURL; for
// GitHub Enterprise Server, https://HOST/api/v3). base carries the requests;
// nil means http.DefaultTransport.
func NewAppClients(appID int64, privateKey []byte, baseURL string, base http.RoundTripper) (*AppClients, error) {
	if base == nil {
		base = http.DefaultTransport
	}
	root, err := apiRoot(baseURL)
	if err != nil {
		return nil, err
	}
	apps, err := ghinstallation.NewAppsTransport(base, appID, privateKey)
	if err != nil {
		return nil, fmt.Errorf("github app %d: %w", appID, err)
	}
	apps.BaseURL = root
	return &AppClients{apps: apps, baseURL: root, clients: map[int64]*github.Client{}}, nil
}

// Client returns the client for an installation, creating it on first use.
func (a *AppClients) Client(_ context.Context, installationID int64) (*github.Client, error) {
	if installationID <= 0 {
		return nil, fmt.Errorf("github app: no installation id in the event")
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if c, ok := a.clients[installationID]; ok {
		return c, nil
	}
	itr := ghinstallation.NewFromAppsTransport(a.apps, installationID)
	itr.BaseURL = a.baseURL
	// ghinstallation otherwise sends the body "null", which GitHub's API
	// description does not allow.
	itr.InstallationTokenOptions = &github.InstallationTokenOptions{}
	c, err := newClient(&http.Client{Transport: itr}, a.baseURL)
	if err != nil {
		return nil, err
	}
	a.clients[installationID] = c
	return c, nil
}

// TokenClients authenticates every request with one plain token (a
// personal access token, or the GITHUB_TOKEN of a workflow), whatever the
// installation.
type TokenClients struct{ c *github.Client }

// NewTokenClients returns clients using token against baseURL ("" means
// DefaultBaseURL); base carries the requests, nil meaning
// http.DefaultTransport.
func NewTokenClients(token, baseURL string, base http.RoundTripper) (*TokenClients, error) {
	c, err := NewTokenClient(token, baseURL, base)
	if err != nil {
		return nil, err
	}
	return &TokenClients{c: c}, nil
}

// Client returns the token's client.
func (t *TokenClients) Client(context.Context, int64) (*github.Client, error) { return t.c, nil }

// NewTokenClient returns a go-github client using token against baseURL
// ("" means DefaultBaseURL).
func NewTokenClient(token, baseURL string, base http.RoundTripper) (*github.Client, error) {
	if token == "" {
		return nil, fmt.Errorf("github: empty token")
	}
	if base == nil {
		base = http.DefaultTransport
	}
	root, err := apiRoot(baseURL)
	if err != nil {
		return nil, err
	}
	c, err := newClient(&http.Client{Transport: base}, root)
	if err != nil {
		return nil, err
	}
	return c.WithAuthToken(token), nil
}

func newClient(hc *http.Client, root string) (*github.Client, error) {
	c := github.NewClient(hc)
	u, err := url.Parse(root + "/")
	if err != nil {
		return nil, fmt.Errorf("github base url: %w", err)
	}
	c.BaseURL = u
	return c, nil
}

// apiRoot checks baseURL and returns it without a trailing slash.
func apiRoot(baseURL string) (string, error) {
	if baseURL == "" {
		return DefaultBaseURL, nil
	}
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return "", fmt.Errorf("github base url %q: want http(s)://host[/path]", baseURL)
	}
	return strings.TrimSuffix(baseURL, "/"), nil
}
