package action

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench/artifacts"
	"github.com/pairbench/pairbench/viewer"
)

// siteHost serves the test's bucket as a website, the way a static host
// or a CDN in front of the bucket would: GET /<key> answers the stored
// object with the site's headers. It returns the host's base URL.
func (b *bench) siteHost() string {
	b.t.Helper()
	store := b.store()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key, ok := strings.CutPrefix(r.URL.Path, "/runs/")
		_, rel, _ := strings.Cut(key, "/")
		headers, known := viewer.Headers(rel)
		if !ok || !known {
			http.NotFound(w, r)
			return
		}
		rc, err := store.Get(r.Context(), key)
		if errors.Is(err, artifacts.ErrNotExist) {
			http.NotFound(w, r)
			return
		} else if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer rc.Close()
		for k, v := range headers {
			w.Header()[k] = v
		}
		io.Copy(w, rc)
	}))
	b.t.Cleanup(srv.Close)
	return srv.URL
}

// followSite opens the report site at link and follows its relative
// links as a reader would: the run page to an intent page, to a pair page,
// to both arms' screenshots and transcripts. Every page and file must be
// there: a published run is whole.
func followSite(t *testing.T, link, runID string) {
	t.Helper()
	fetch := func(u string) string {
		t.Helper()
		resp, err := http.Get(u)
		require.NoError(t, err, u)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode, u)
		return string(b)
	}
	base := link[:strings.LastIndex(link, "/")+1]
	run := fetch(link)
	assert.Contains(t, run, runID)
	intent := regexp.MustCompile(`href="(intents/[^"#]+\.html)"`).FindStringSubmatch(run)
	require.NotNil(t, intent, "the run page links its intent pages")
	page := fetch(base + intent[1])
	assert.NotContains(t, page, "no trial directories", "a published run's intent pages link their pairs")
	pair := regexp.MustCompile(`href="([^"#/]+/[0-9]+\.html)"`).FindStringSubmatch(page)
	require.NotNil(t, pair, "the intent page links its pair pages")
	pairURL := base + "intents/" + pair[1]
	body := fetch(pairURL)
	assert.NotContains(t, body, "has no "+"transcript.jsonl")
	files := regexp.MustCompile(`(?:src|href)="\.\./\.\./(trials/[^"]+/(?:screenshot\.png|transcript\.jsonl))"`).FindAllStringSubmatch(body, -1)
	var shots, transcripts int
	seen := map[string]bool{}
	for _, f := range files {
		if seen[f[1]] {
			continue
		}
		seen[f[1]] = true
		fetch(base + f[1])
		if strings.HasSuffix(f[1], ".png") {
			shots++
		} else {
			transcripts++
		}
	}
	assert.Equal(t, 2, shots, "both arms' screenshots, from %s", pairURL)
	assert.Equal(t, 2, transcripts, "both arms' transcripts, from %s", pairURL)
}
