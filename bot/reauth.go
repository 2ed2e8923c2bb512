package bot

import (
	"net/http"
	"sync"
)

// reauth is an installation's transport that mints a new installation
// token when GitHub answers 401 to one it has not expired (revoked,
// rotated): ghinstallation keeps a token until it expires, so every
// request would fail until the hour ended. The 401's request is sent once
// more with the new token; a second 401 is returned (the job backs off).
// Concurrent 401s of one token mint one new token.
type reauth struct {
	mint func() http.RoundTripper // a transport that mints its own token

	mu  sync.Mutex
	cur http.RoundTripper
}

func newReauth(mint func() http.RoundTripper) *reauth { return &reauth{mint: mint, cur: mint()} }

func (t *reauth) RoundTrip(r *http.Request) (*http.Response, error) {
	t.mu.Lock()
	cur := t.cur
	t.mu.Unlock()
	resp, err := cur.RoundTrip(r)
	if err != nil || resp.StatusCode != http.StatusUnauthorized {
		return resp, err
	}
	t.mu.Lock()
	if t.cur == cur {
		t.cur = t.mint()
	}
	next := t.cur
	t.mu.Unlock()
	retry := r.Clone(r.Context())
	if r.Body != nil && r.Body != http.NoBody {
		if r.GetBody == nil {
			return resp, nil // the body cannot be sent again: the job's retry will
		}
		body, err := r.GetBody()
		if err != nil {
			return resp, nil
		}
		retry.Body = body
	}
	resp.Body.Close()
	return next.RoundTrip(retry)
}
