package config

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestComparisonsFromAPullRequestsDiff(t *testing.T) {
	cfg := Config{Paths: DefaultPaths, Domains: map[string][]string{"books.example": {"shared/catalogue-*.js"}}}
	base := map[string]bool{"books.example": true, "weather.example": true, "maps.example": true}
	inBase := func(d string) bool { return base[d] }
	changed := []string{
		"domains/books.example/tools/find_books.js", // tools changed
		"bench/intents/weather.example/oslo.yaml",   // intents only
		"domains/news.example/domain.json",          // a new domain
		"bench/intents/news.example/headline.yaml",  // its intent
		"README.md",                   // nothing's
		"domains/BAD_NAME/tools/x.js", // not a domain name
		"domains/README.md",           // not in a domain
	}
	got := Comparisons(cfg, changed, inBase)
	assert.Equal(t, []Comparison{
		{Domain: "books.example", Against: []Against{AgainstBase}, ToolsChanged: true},
		{Domain: "news.example", Against: []Against{AgainstNone}, New: true, ToolsChanged: true},
		{Domain: "weather.example", Against: []Against{AgainstNone}},
	}, got, "maps.example is untouched: not benched")

	// A file that a domain's glob matches changes its tools.
	got = Comparisons(cfg, []string{"shared/catalogue-v2.js"}, inBase)
	assert.Equal(t, []Comparison{{Domain: "books.example", Against: []Against{AgainstBase}, ToolsChanged: true}}, got)

	// compare: both asks for head against no tools as well.
	cfg.Compare = CompareBoth
	got = Comparisons(cfg, changed[:1], inBase)
	assert.Equal(t, []Against{AgainstBase, AgainstNone}, got[0].Against)

	assert.Empty(t, Comparisons(cfg, []string{"README.md"}, inBase), "nothing of a domain changed: nothing benched")
	// Without a base registry every domain is new.
	got = Comparisons(Config{}, changed[:1], func(string) bool { return false })
	assert.True(t, got[0].New)
	assert.Equal(t, []Against{AgainstNone}, got[0].Against)
}
