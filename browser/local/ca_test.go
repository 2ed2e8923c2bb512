package local

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench/browser/internal/testsite"
	"github.com/pairbench/pairbench/internal/tlstest"
)

// TestCACertTrustsAStagingSite: with its CA trusted for the run, the real
// browser loads an HTTPS staging site whose CA no system trusts, and its
// origin is a secure context (WebMCP needs one).
func TestCACertTrustsAStagingSite(t *testing.T) {
	site := testsite.New(t)
	ca := tlstest.NewCA(t, "pairbench test staging CA")
	staging := ca.Serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, testsite.BooksPage)
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
	assert.Equal(t, "true", startTab(t.Context(), t, b).eval(t.Context(), "window.isSecureContext"))
}
