package driver

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench/browser/internal/testsite"
	"github.com/pairbench/pairbench/internal/tlstest"
)

// closedAddr is a loopback address where nothing listens.
func closedAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	l.Close()
	return addr
}

// TestStartPageErrorsNameTheCause loads start pages that cannot load in the
// real browser, each for another reason, and the error names it: a name
// that does not resolve (with the run's mappings, a typo's likely cause),
// a mapping to an address where nothing listens, and a staging site whose
// CA the run does not trust (over https, where Chromium alone says only
// an error code). Never "document.modelContext is missing".
func TestStartPageErrorsNameTheCause(t *testing.T) {
	site := testsite.New(t)
	ca := tlstest.NewCA(t, "pairbench test staging CA")
	staging := ca.Serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, testsite.BooksPage)
	}), "staging.test")
	closed := closedAddr(t)
	p := newProvider(t, site, func(c *LocalConfig) {
		c.Hosts["closed.test"] = closed
		c.Hosts["staging.test"] = strings.TrimPrefix(staging.URL, "https://")
	})
	b := openBrowser(t, p)
	for _, c := range []struct{ url, want string }{
		{"http://bookz.test/", "the name bookz.test does not resolve on this host (no such host); --host maps only books.test, closed.test, staging.test, weather.test, not bookz.test"},
		{"https://bookz.test/", "the name bookz.test does not resolve on this host"},
		{"http://closed.test/", "--host maps closed.test to " + closed + ", where nothing listens (connection refused)"},
		{"https://closed.test/", "--host maps closed.test to " + closed + ", where nothing listens (connection refused)"},
		{"https://staging.test/", "TLS with staging.test fails: its certificate is signed by an authority this run does not trust; trust its CA for the run with --ca-cert FILE"},
	} {
		t.Run(c.url, func(t *testing.T) {
			_, err := b.Load(context.Background(), c.url)
			var sp *StartPageError
			require.True(t, errors.As(err, &sp), "%v", err)
			assert.Contains(t, err.Error(), "start page "+c.url+" did not load: "+c.want)
			assert.NotContains(t, err.Error(), "modelContext")
		})
	}
}
