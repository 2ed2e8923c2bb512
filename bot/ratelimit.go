package bot

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// rateGate holds back one client's requests (one installation's, or a
// token's) while GitHub's rate limit says to wait: after an answer 429, or
// 403 with Retry-After or no request remaining, every request until the
// wait ends is answered 429 here, with the Retry-After left, and never
// reaches GitHub. go-github does so itself only for the 403s it maps to
// its rate-limit errors; GitHub warns that requests sent inside a secondary
// limit can get an integration banned. The jobs snooze on the answer
// (rateLimited).
type rateGate struct {
	next  http.RoundTripper
	mu    sync.Mutex
	until time.Time
}

func (g *rateGate) RoundTrip(r *http.Request) (*http.Response, error) {
	g.mu.Lock()
	wait := time.Until(g.until)
	g.mu.Unlock()
	if wait > 0 {
		if r.Body != nil {
			r.Body.Close()
		}
		secs := strconv.Itoa(int((wait + time.Second - 1) / time.Second))
		body := fmt.Sprintf(`{"message":"pairbench waits out GitHub's rate limit for %ss more; the request was not sent"}`, secs)
		return &http.Response{
			StatusCode: http.StatusTooManyRequests, Status: "429 Too Many Requests", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
			Header: http.Header{"Retry-After": {secs}, "Content-Type": {"application/json"}},
			Body:   io.NopCloser(bytes.NewReader([]byte(body))), ContentLength: int64(len(body)), Request: r,
		}, nil
	}
	resp, err := g.next.RoundTrip(r)
	if err != nil || resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode != http.StatusForbidden {
		return resp, err
	}
	if d, ok := waitOf(resp); ok {
		g.mu.Lock()
		g.until = maxTime(g.until, time.Now().Add(d))
		g.mu.Unlock()
	}
	return resp, nil
}

// waitOf reads how long a 403 or 429 answer asks to wait: Retry-After
// first, then the primary limit's reset when none remains, else a minute
// for a 429 (GitHub's advice for a secondary limit). A 403 that says
// neither is no rate limit.
func waitOf(resp *http.Response) (time.Duration, bool) {
	h := resp.Header
	switch {
	case h.Get("Retry-After") != "":
		if secs, err := strconv.Atoi(h.Get("Retry-After")); err == nil {
			return clampWait(time.Duration(secs)*time.Second + time.Second), true
		}
		return time.Minute, true
	case h.Get("X-RateLimit-Remaining") == "0":
		if reset, err := strconv.ParseInt(h.Get("X-RateLimit-Reset"), 10, 64); err == nil {
			return clampWait(time.Until(time.Unix(reset, 0)) + time.Second), true
		}
		return time.Minute, true
	case resp.StatusCode == http.StatusTooManyRequests:
		return time.Minute, true
	}
	return 0, false
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
