package intents

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestURLPatternExample(t *testing.T) {
	for pattern, want := range map[string]string{
		"http://books.example/*":               "http://books.example/",
		"https://*.example.com/search*":        "https://x.example.com/search",
		"http://shop.example/item/:id":         "http://shop.example/item/x",
		"http://shop.example/item/:id?":        "http://shop.example/item",
		`http://shop.example/item/(\d+)`:       "http://shop.example/item/0",
		"http{s}?://shop.example/":             "http://shop.example/",
		"http://shop.example/search?q=*":       "http://shop.example/search?q=",
		"http://shop.example:8080/a":           "http://shop.example:8080/a",
		"https://:tenant.example.com/app/*":    "https://x.example.com/app/",
		"http://Shop.Example/Books/*":          "http://shop.example/Books/",
		"http://shop.example/a/:x/b#:frag":     "http://shop.example/a/x/b#x",
		"http://shop.example/(item|product)/*": "http://shop.example/item/",
	} {
		p, err := ParseURLPattern(pattern)
		require.NoError(t, err, pattern)
		got, err := p.Example()
		require.NoError(t, err, pattern)
		assert.Equal(t, want, got, pattern)
		assert.True(t, p.Match(got), "%s must match its example %s", pattern, got)
	}
}
