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
	// Login is the account the clients write as: "<app slug>[bot]" for an
	// App, the token's user for a plain token. The bot never acts on its
	// comments, and finds its own comments again by it.
	Login(ctx context.Context) (string, error)
}

// loginCache remembers a login once asked.
type loginCache struct {
	mu    sync.Mutex
	login string
}

func (l *loginCache) get(ask func() (string, error)) (string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.login != "" {
		return l.login, nil
	}
	login, err := ask()
	if err != nil {
		return "", err
	}
	l.login = login
	return login, nil
}

// AppClients authenticates as a GitHub App: a JWT signed with the app's
// private key buys a token per installation, refreshed before it expires.
type AppClients struct {
	apps    *ghinstallation.AppsTransport
	base    http.RoundTripper
	baseURL string

	mu      sync.Mutex
	clients map[int64]*github.Client
	login   loginCache
}

// NewAppClients returns clients for the app appID whose PEM private key is
// privateKey. baseURL is the REST API root ("" means DefaultBaseURL; for
// GitHub Enterprise Server, https://HOST/api/v3). base carries the requests;
// nil means http.DefaultTransport. If base has a method
// InstallationTransport(id int64, rt http.RoundTripper) http.RoundTripper,
// installation id's client sends its requests through the transport it
// returns around rt (to watch that installation's rate limit, say).
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
	return &AppClients{apps: apps, base: base, baseURL: root, clients: map[int64]*github.Client{}}, nil
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
	var rt http.RoundTripper = newReauth(func() http.RoundTripper {
		itr := ghinstallation.NewFromAppsTransport(a.apps, installationID)
		itr.BaseURL = a.baseURL
		// ghinstallation otherwise sends the body "null", which GitHub's API
		// description does not allow.
		itr.InstallationTokenOptions = &github.InstallationTokenOptions{}
		return itr
	})
	if w, ok := a.base.(interface {
		InstallationTransport(int64, http.RoundTripper) http.RoundTripper
	}); ok {
		rt = w.InstallationTransport(installationID, rt)
	}
	c, err := newClient(&http.Client{Transport: rt}, a.baseURL)
	if err != nil {
		return nil, err
	}
	a.clients[installationID] = c
	return c, nil
}

// Login returns "<app slug>[bot]", asking GitHub for the slug once.
func (a *AppClients) Login(ctx context.Context) (string, error) {
	return a.login.get(func() (string, error) {
		c, err := newClient(&http.Client{Transport: a.apps}, a.baseURL)
		if err != nil {
			return "", err
		}
		app, _, err := c.Apps.Get(ctx, "")
		if err != nil {
			return "", fmt.Errorf("github app: who am I: %w", err)
		}
		return app.GetSlug() + "[bot]", nil
	})
}

// TokenClients authenticates every request with one plain token (a
// personal access token, or the GITHUB_TOKEN of a workflow), whatever the
// installation.
type TokenClients struct {
	c     *github.Client
	login loginCache
}

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

// Login returns the token's user, asking GitHub once.
func (t *TokenClients) Login(ctx context.Context) (string, error) {
	return t.login.get(func() (string, error) { return tokenLogin(ctx, t.c) })
}

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
	var rt http.RoundTripper = base
	if w, ok := base.(interface {
		InstallationTransport(int64, http.RoundTripper) http.RoundTripper
	}); ok {
		rt = w.InstallationTransport(0, base) // a token's limit is the token's
	}
	c, err := newClient(&http.Client{Transport: rt}, root)
	if err != nil {
		return nil, err
	}
	return c.WithAuthToken(token), nil
}

// newClient returns a client of root over hc's transport, every write
// redacted (postedTransport), holding back its requests while a rate limit
// lasts (rateGate).
func newClient(hc *http.Client, root string) (*github.Client, error) {
	next := hc.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	hc.Transport = postedTransport{next: &rateGate{next: next}}
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
