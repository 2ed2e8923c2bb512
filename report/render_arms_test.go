package report

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench"
)

// TestMarkdownNamesTheArms: a head-against-base report names both arms by
// what they are, gives the verdict at the margins, the tools' differences
// and each tool's calls per arm, in the comment and the check run alike.
func TestMarkdownNamesTheArms(t *testing.T) {
	plan := armsPlan(1, 8)
	plan.Arms.Domains = []DomainArms{
		{Domain: "books.example", Added: []string{"search_books"}, Removed: []string{"list_genre"}, Edited: []string{"find_books"}},
		{Domain: "news.example", AbsentInControl: true},
	}
	var rows []pairbench.Row
	for p := range 8 {
		c, tr := row("i0", p, pairbench.AB, pairbench.Control, 1, ok(30)), row("i0", p, pairbench.AB, pairbench.Treatment, 1, wrong(31))
		c.WebMCP = []pairbench.Invocation{{Tool: "find_books", Registered: true, Status: "ok"}}
		tr.WebMCP = []pairbench.Invocation{{Tool: "find_books", Registered: true, Status: "error", Error: "HTTP 400"}}
		rows = append(rows, c, tr)
	}
	rep := Build(plan, rows)
	for _, md := range []string{Markdown(rep, MarkdownOptions{}), CheckSummary(rep, MarkdownOptions{})} {
		assert.Contains(t, md, "**Compared:** this PR's tools (5d6e7f8) (treatment, `tools`) against main@\u20601a2b3c4's tools (control, `tools@main`)")
		assert.Contains(t, md, "**Head against base: worse** (margins: at most 5 points less accurate, at most 10% slower)")
		assert.Contains(t, md, "- `i0`: **worse**: head was shown more than 5 points less accurate")
		assert.Contains(t, md, "- `books.example`: added `search_books`; removed `list_genre`; edited `find_books`")
		assert.Contains(t, md, "- `news.example`: new: not in the control's registry, so benched against no tools")
		assert.Contains(t, md, "| `books.example` | `find_books` | 8 | 0 | 8 | 8 |")
	}
	plan.Arms = nil
	assert.NotContains(t, Markdown(Build(plan, rows), MarkdownOptions{}), "Compared:", "a run of no tools against tools reads as before")
}

func TestHTMLNamesTheArms(t *testing.T) {
	plan := armsPlan(1, 8)
	plan.Arms.Domains = []DomainArms{{Domain: "books.example", Edited: []string{"find_books"}}}
	var rows []pairbench.Row
	for p := range 8 {
		rows = append(rows, pairRows("i0", p, ok(30), wrong(31))...)
	}
	var b strings.Builder
	require.NoError(t, WriteHTML(&b, Build(plan, rows), HTMLOptions{}))
	page := b.String()
	assert.Contains(t, page, "<strong>Compared:</strong> this PR&#39;s tools (5d6e7f8) (treatment, <code>tools</code>) against main@1a2b3c4&#39;s tools (control, <code>tools@main</code>).")
	assert.Contains(t, page, "<strong>Head against base: worse</strong> (margins: at most 5 points less accurate, at most 10% slower).")
	assert.Contains(t, page, "<li><code>books.example</code>: edited <code>find_books</code>;</li>")
	plan.Arms = nil
	b.Reset()
	require.NoError(t, WriteHTML(&b, Build(plan, rows), HTMLOptions{}))
	assert.NotContains(t, b.String(), "Compared:")
}
