package intents

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestURLPatternMatch(t *testing.T) {
	cases := []struct {
		pattern, url string
		want         bool
	}{
		// Whole-site wildcards.
		{"http://books.example/*", "http://books.example/", true},
		{"http://books.example/*", "http://books.example/search?author=Ada", true},
		{"http://books.example/*", "http://books.example/a/b/c#frag", true},
		{"http://books.example/*", "https://books.example/", false},
		{"http://books.example/*", "http://weather.example/", false},
		{"http://books.example/*", "http://books.example.evil/", false},
		{"http://books.example/*", "http://evil.books.example/", false},
		// No port in the pattern: only the default port.
		{"http://books.example/*", "http://books.example:80/x", true},
		{"http://books.example/*", "http://books.example:8080/x", false},
		{"http://books.example:*/*", "http://books.example:8080/x", true},
		{"http://books.example:8080/*", "http://books.example:8080/x", true},
		// Hostname wildcards.
		{"https://*.example.com/search*", "https://www.example.com/search", true},
		{"https://*.example.com/search*", "https://a.b.example.com/search?q=1", true},
		{"https://*.example.com/search*", "https://www.example.com/searching/x", true},
		{"https://*.example.com/search*", "https://example.com/search", false},
		{"https://*.example.com/search*", "https://www.example.com/other", false},
		{"https://*.example.com/search*", "https://WWW.EXAMPLE.COM/search", true},
		// Named segments.
		{"http://shop.example/item/:id", "http://shop.example/item/42", true},
		{"http://shop.example/item/:id", "http://shop.example/item/42/reviews", false},
		{"http://shop.example/item/:id", "http://shop.example/item/", false},
		{"http://shop.example/item/:id?", "http://shop.example/item", true},
		{"http://shop.example/item/:id?", "http://shop.example/item/7", true},
		{"http://shop.example/files/:path+", "http://shop.example/files/a/b", true},
		{"http://shop.example/files/:path*", "http://shop.example/files", true},
		{"https://:sub.example.org/", "https://news.example.org/", true},
		{"https://:sub.example.org/", "https://a.news.example.org/", false},
		// Regexp groups and non-capturing groups.
		{"http://shop.example/item/(\\d+)", "http://shop.example/item/42", true},
		{"http://shop.example/item/(\\d+)", "http://shop.example/item/abc", false},
		{"http://shop.example/item/:id(\\d+)", "http://shop.example/item/9", true},
		{"http{s}?://shop.example/", "http://shop.example/", true},
		{"http{s}?://shop.example/", "https://shop.example/", true},
		{"http{s}?://shop.example/", "ftp://shop.example/", false},
		{"http://shop.example/books{/old}?", "http://shop.example/books", true},
		{"http://shop.example/books{/old}?", "http://shop.example/books/old", true},
		{"http://shop.example/books{/old}?", "http://shop.example/books/new", false},
		// Search and hash.
		{"http://shop.example/search?q=*", "http://shop.example/search?q=shoes", true},
		{"http://shop.example/search?q=*", "http://shop.example/search?page=2", false},
		{"http://shop.example/search", "http://shop.example/search?q=anything", true},
		{"http://shop.example/page#top", "http://shop.example/page#top", true},
		{"http://shop.example/page#top", "http://shop.example/page#bottom", false},
		// Protocol wildcards and escapes.
		{"*://shop.example/*", "https://shop.example/x", true},
		{"http://shop.example/a\\*b", "http://shop.example/a*b", true},
		{"http://shop.example/a\\*b", "http://shop.example/axxb", false},
		// Pathname is case-sensitive; a bare host means "/".
		{"http://shop.example/Books", "http://shop.example/books", false},
		{"http://shop.example", "http://shop.example/", true},
		{"http://shop.example", "http://shop.example", true},
		// Userinfo.
		{"http://shop.example/*", "http://user:pw@shop.example/", true},
		{"http://admin@shop.example/*", "http://guest@shop.example/", false},
		// Not a URL.
		{"http://shop.example/*", "not a url", false},
	}
	require.GreaterOrEqual(t, len(cases), 30)
	for _, tc := range cases {
		p, err := ParseURLPattern(tc.pattern)
		require.NoError(t, err, "ParseURLPattern(%q)", tc.pattern)
		assert.Equal(t, tc.want, p.Match(tc.url), "ParseURLPattern(%q).Match(%q)", tc.pattern, tc.url)
		// Every pattern of the table has an example URL it matches.
		example, err := p.Example()
		if assert.NoError(t, err, tc.pattern) {
			assert.True(t, p.Match(example), "%s: example %s", tc.pattern, example)
		}
	}
}

func TestURLPatternErrors(t *testing.T) {
	for _, bad := range []string{
		"/relative/*",
		"books.example/*",
		"://books.example/",
		"http:///path",
		"http://shop.example/item/:",
		"http://shop.example/item/(",
		"http://shop.example/item/{x",
		"http://shop.example/item/x}",
		"http://shop.example/item/([)",
		"http://shop.example/a\\",
	} {
		_, err := ParseURLPattern(bad)
		assert.Error(t, err, "ParseURLPattern(%q)", bad)
	}
}

func TestMatchAny(t *testing.T) {
	a, err := ParseURLPattern("http://a.example/*")
	require.NoError(t, err)
	b, err := ParseURLPattern("http://b.example/*")
	require.NoError(t, err)
	ps := []*URLPattern{a, b}
	assert.True(t, MatchAny(ps, "http://b.example/x"))
	assert.False(t, MatchAny(ps, "http://c.example/x"))
	assert.False(t, MatchAny(nil, "http://a.example/x"))
	assert.Equal(t, "http://a.example/*", a.String())
}

func BenchmarkURLPatternMatch(b *testing.B) {
	p, err := ParseURLPattern("https://*.example.com/search*")
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		p.Match("https://www.example.com/search?q=books&page=2")
	}
}
