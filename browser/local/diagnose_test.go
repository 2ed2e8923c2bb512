package local

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
	site := newTestSite(t)
	ca := tlstest.NewCA(t, "pairbench test staging CA")
	staging := ca.Serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, booksPage)
	}), "staging.test")
	closed := closedAddr(t)
	p := newProvider(t, site, func(c *Config) {
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

// TestCACertTrustsAStagingSite: with its CA trusted for the run, the real
// browser loads an HTTPS staging site whose CA no system trusts, and its
// origin is a secure context (WebMCP needs one).
func TestCACertTrustsAStagingSite(t *testing.T) {
	site := newTestSite(t)
	ca := tlstest.NewCA(t, "pairbench test staging CA")
	staging := ca.Serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, booksPage)
	}), "staging.test")
	certs, err := ReadCACerts(ca.WriteFile(t))
	require.NoError(t, err)
	p := newProvider(t, site, func(c *Config) {
		c.Hosts["staging.test"] = strings.TrimPrefix(staging.URL, "https://")
		c.CACerts = certs
	})
	b := openBrowser(t, p)
	info, err := b.Load(context.Background(), "https://staging.test/")
	require.NoError(t, err)
	assert.Equal(t, "https://staging.test/", info.URL)
	var secure bool
	require.NoError(t, b.eval(context.Background(), b.start, "window.isSecureContext", &secure))
	assert.True(t, secure)
}
