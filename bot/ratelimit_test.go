package bot_test

import (
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench/bot/githubtest"
)

// TestA429IsWaitedOutLikeA403: GitHub answers the first check run create
// with 429 Too Many Requests, once with Retry-After: 3 (a secondary limit)
// and once with no request left until a reset 3 s away (a primary limit).
// The next try waits as long as GitHub said; go-github maps only 403 to its
// rate-limit errors, and a 429 used to be retried after a second.
func TestA429IsWaitedOutLikeA403(t *testing.T) {
	t.Parallel()
	for name, header := range map[string]func() http.Header{
		"retry-after": func() http.Header { return http.Header{"Retry-After": {"3"}} },
		"reset": func() http.Header {
			return http.Header{"X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {strconv.FormatInt(time.Now().Add(3*time.Second).Unix()+1, 10)}}
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, actions)
			var mu sync.Mutex
			var tries []time.Time
			f.gh.SetFaults(func(r *http.Request) githubtest.Fault {
				if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/check-runs") {
					return githubtest.Fault{}
				}
				mu.Lock()
				defer mu.Unlock()
				tries = append(tries, time.Now())
				if len(tries) == 1 {
					return githubtest.Fault{Status: http.StatusTooManyRequests, Header: header(), Message: "Too Many Requests"}
				}
				return githubtest.Fault{}
			})
			f.opened(t, nil)
			require.Len(t, f.gh.CheckRuns(repoName), 1)
			mu.Lock()
			defer mu.Unlock()
			require.GreaterOrEqual(t, len(tries), 2)
			assert.GreaterOrEqual(t, tries[1].Sub(tries[0]), 3*time.Second, "the retry waited as GitHub said")
		})
	}
}
