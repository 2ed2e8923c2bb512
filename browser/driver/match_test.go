package driver

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench/browser/internal/testsite"
	"github.com/pairbench/pairbench/intents"
)

// TestURLGuardAgreesWithIntents runs the page-side URL guard in Chromium on
// the patterns package intents matches in Go, and requires the same answer
// for every URL: a tool is registered in the page exactly where the registry
// says it applies.
func TestURLGuardAgreesWithIntents(t *testing.T) {
	cases := []struct{ pattern, url string }{
		{"http://books.example/*", "http://books.example/"},
		{"http://books.example/*", "http://books.example/search?author=Ada"},
		{"http://books.example/*", "https://books.example/"},
		{"http://books.example/*", "http://books.example.evil/"},
		{"http://books.example/*", "http://evil.books.example/"},
		{"http://books.example/*", "http://books.example:8080/x"},
		{"http://books.example:*/*", "http://books.example:8080/x"},
		{"https://*.example.com/search*", "https://www.example.com/search"},
		{"https://*.example.com/search*", "https://a.b.example.com/search?q=1"},
		{"https://*.example.com/search*", "https://example.com/search"},
		{"https://*.example.com/search*", "https://www.example.com/other"},
		{"http://shop.example/item/:id", "http://shop.example/item/42"},
		{"http://shop.example/item/:id", "http://shop.example/item/42/reviews"},
		{"http://shop.example/item/:id?", "http://shop.example/item"},
		{"http://shop.example/files/:path+", "http://shop.example/files/a/b"},
		{"http://shop.example/item/(\\d+)", "http://shop.example/item/abc"},
		{"http://shop.example/item/:id(\\d+)", "http://shop.example/item/9"},
		{"http{s}?://shop.example/", "https://shop.example/"},
		{"http{s}?://shop.example/", "ftp://shop.example/"},
		{"http://shop.example/books{/old}?", "http://shop.example/books/new"},
		{"http://shop.example/search?q=*", "http://shop.example/search?q=shoes"},
		{"http://shop.example/search?q=*", "http://shop.example/search?page=2"},
		{"http://shop.example/search", "http://shop.example/search?q=anything"},
		{"http://shop.example/page#top", "http://shop.example/page#bottom"},
		{"*://shop.example/*", "https://shop.example/x"},
		{"http://shop.example/Books", "http://shop.example/books"},
		{"http://shop.example", "http://shop.example/"},
		{"http://admin@shop.example/*", "http://guest@shop.example/"},
	}
	site := testsite.New(t)
	b := openBrowser(t, newProvider(t, site))
	_, err := b.Load(t.Context(), "http://books.test/")
	require.NoError(t, err)
	for _, c := range cases {
		p, err := intents.ParseURLPattern(c.pattern)
		require.NoError(t, err, c.pattern)
		expr, err := call(matchJS, []string{c.pattern}, c.url)
		require.NoError(t, err)
		var inPage bool
		require.NoError(t, b.eval(t.Context(), b.start, expr, &inPage))
		assert.Equal(t, p.Match(c.url), inPage, "pattern %q on %q: Go %v, page %v", c.pattern, c.url, p.Match(c.url), inPage)
	}
}
