package model

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/pairbench/pairbench/intents"
)

func TestCorpusHas(t *testing.T) {
	c := newCorpus([]string{
		"- text: Total  $1,234.50 for 3 nights\n- text: Year 2026",
		`{"title":"Caf\u00e9 \"Noir\"","rating":4.5,"count":12000}`,
	})
	tests := []struct {
		v    any
		want bool
	}{
		{"total $1,234.50", true}, // case and spacing aside
		{"$1,234.50", true},       // as written
		{"1,234.50 €", true},      // its amount appears as a number
		{"Café \"Noir\"", true},   // from the JSON leaves, unescaped
		{"Le Noir", false},        // not there
		{4.5, true},               // from the JSON leaf
		{12000, true},             // raw JSON text
		{12000.0, true},           // same number as float
		{3, true},                 // "3 nights"
		{1234.5, true},            // spelled 1,234.50
		{202, false},              // inside 2026
		{34.5, false},             // inside 1,234.50
		{7, false},                // absent
		{true, true},              // booleans count once anything was read
		{nil, true},               //
		{[]any{"x"}, false},       // lists are not scalars
		{"", true},                // nothing to find
		{map[string]any{}, false}, // not a scalar
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, c.has(tt.v), "has(%#v)", tt.v)
	}
	assert.False(t, newCorpus(nil).has(true), "nothing read, nothing known")

	books := newCorpus([]string{`{"books":[{"id":11,"title":"A"},{"id":12,"title":"B"},{"id":13,"title":"C"}]}`})
	assert.True(t, books.has(3), "the length of a list counts as read")
	assert.False(t, books.has(4))
}

func TestFailed(t *testing.T) {
	for res, want := range map[string]bool{
		"":                                             true,
		`{"status":"error","message":"boom"}`:          true,
		`{"isError":true}`:                             true,
		`{"error":"tool not live"}`:                    true,
		`{"error":{"code":1}}`:                         true,
		`{"error":""}`:                                 false,
		`{"status":"ok","books":[]}`:                   false,
		`[{"title":"Dune"}]`:                           false,
		"Error: tool find_books is not live":           true,
		"MCP tool pairbench/webmcp returned an error":  true,
		"Dune costs $9.99":                             false,
		"webmcp: find_books did not finish within 30s": true,
		"find_books failed: TypeError: x is undefined": true,
		"The Cartographer's Error, $9.99":              false,
	} {
		assert.Equal(t, want, failed(res, "find_books"), "failed(%q)", res)
	}
}

func TestLists(t *testing.T) {
	assert.True(t, lists(`{"tools":[{"name":"find_books"}]}`, "find_books"))
	assert.True(t, lists(`[{"name":"other"},{"name":"find_books","title":"x"}]`, "find_books"))
	assert.False(t, lists(`{"tools":[{"name":"find_books_v2","description":"find_books"}]}`, "find_books"), "only a name field counts in JSON")
	assert.True(t, lists("Tools on this page:\n- find_books: lists books", "find_books"))
	assert.False(t, lists("Tools on this page:\n- find_books_fast", "find_books"))
	assert.False(t, lists("No WebMCP tools on this page.", "find_books"))
}

func TestToolsetFind(t *testing.T) {
	tools := toolset{"mcp__browser__browser_navigate": nil, "mcp__pairbench__webmcp": nil, "browser_click": nil, "mcp__zz__webmcp": nil}
	assert.Equal(t, "mcp__pairbench__webmcp", tools.find("webmcp"), "the first by name when two servers offer it")
	assert.Equal(t, "mcp__browser__browser_navigate", tools.find("browser_navigate"))
	assert.Equal(t, "mcp__browser__browser_navigate", tools.find("mcp__browser__browser_navigate"))
	assert.Equal(t, "browser_click", tools.find("browser_click"))
	assert.Empty(t, tools.find("navigate"), "a suffix must follow __")
	assert.Empty(t, tools.find(""))
}

func TestMatchIntent(t *testing.T) {
	all := []intents.Intent{
		{ID: "short", Prompt: "Find the cheapest book."},
		{ID: "long", Prompt: "Find the cheapest book.  Then give its   price."},
	}
	msg := func(s string) []string {
		return chatConversation([]chatMessage{{Role: "system", Content: []byte(`"Find the cheapest book."`)}, {Role: "user", Content: []byte(s)}}, nil).user
	}
	in, ok := matchIntent(all, msg(`"Please: Find the cheapest book. Then give its price."`))
	assert.True(t, ok)
	assert.Equal(t, "long", in.ID, "the longest matching prompt wins, white space aside")

	in, ok = matchIntent(all, msg(`[{"type":"text","text":"Find the cheapest book."}]`))
	assert.True(t, ok)
	assert.Equal(t, "short", in.ID)

	_, ok = matchIntent(all, msg(`"Book a flight."`))
	assert.False(t, ok, "the system prompt does not count")
}

func TestFilterAnswerLists(t *testing.T) {
	c := newCorpus([]string{`issues: #36001 (PR #36010), #36005`})
	got, missing := filterAnswer(map[string]any{
		"issues": []any{36001, 36005, 36099},
		"pairs":  []any{map[string]any{"issue": 36001, "pr": 36010}, map[string]any{"issue": 36099, "pr": 1}},
	}, c, "")
	assert.Equal(t, map[string]any{
		"issues": []any{36001, 36005},
		"pairs":  []any{map[string]any{"issue": 36001, "pr": 36010}, map[string]any{"issue": nil, "pr": nil}},
	}, got)
	assert.Equal(t, []string{"issues.2", "pairs.1.issue", "pairs.1.pr"}, missing)
}

func TestFindRef(t *testing.T) {
	snap := "- generic [ref=e1]:\n" +
		"  - heading \"Books by Frank Herbert\" [level=1] [ref=e2]\n" +
		"  - button \"Sort by price (low to high)\" [ref=e6]\n" +
		"  - button \"Sort by  Price\" [ref=e7] [cursor=pointer]\n" +
		"  - link \"Say \\\"hi\\\"\" [ref=e8]\n" +
		"  - text: Sort by price\n"
	for element, want := range map[string]string{
		"sort by price": "e7", // exact name wins over an earlier partial one
		"low to high":   "e6", // else the first name containing it
		"Books":         "e2",
		`Say "hi"`:      "e8", // names are JSON strings
		"Add to cart":   "",
	} {
		ref, ok := findRef(snap, element)
		assert.Equal(t, want != "", ok, "findRef(%q)", element)
		assert.Equal(t, want, ref, "findRef(%q)", element)
	}
}

func TestWithTarget(t *testing.T) {
	old := "- button \"Go\" [ref=e1]"
	latest := "- button \"Go\" [ref=e9]"
	plain := "### Page\n- Page URL: http://books.example/\n### Snapshot\n- [Snapshot](page-1.yml)"
	args := map[string]any{"element": "Go"}
	pw83 := []string{"element", "target", "doubleClick"}
	legacy := []string{"element", "ref"}

	assert.Equal(t, map[string]any{"element": "Go", "target": "e9"}, withTarget(args, pw83, []string{old, latest, plain}), "the latest snapshot's ref")
	assert.Equal(t, map[string]any{"element": "Go"}, args, "the step's own args are not changed")
	assert.Equal(t, map[string]any{"element": "Go", "ref": "e9"}, withTarget(args, legacy, []string{latest}), "under the name the tool declares")
	assert.Equal(t, map[string]any{"element": "Go", "target": "e9"}, withTarget(args, nil, []string{latest}), "target when the tool declares neither")
	assert.Equal(t, map[string]any{"element": "Go", "target": "e3"}, withTarget(map[string]any{"element": "Go", "ref": "e3"}, pw83, []string{latest}), "a given ref is kept, renamed")
	assert.Equal(t, map[string]any{"element": "Go", "ref": "e3"}, withTarget(map[string]any{"element": "Go", "target": "e3"}, legacy, nil), "and back")
	assert.Equal(t, map[string]any{"target": "#go"}, withTarget(map[string]any{"target": "#go"}, pw83, []string{latest}), "a selector target is kept")
	oldStop := "- button \"Stop\" [ref=e1]"
	assert.Equal(t, map[string]any{"element": "Stop"}, withTarget(map[string]any{"element": "Stop"}, pw83, []string{oldStop, latest}), "an element only an older snapshot shows gets no ref")
	assert.Equal(t, map[string]any{}, withTarget(nil, nil, nil))
}

// TestRouteFromTheUsersNotes: notes that name a later navigate step's URL
// send the model straight there; notes that name none, or only the first
// step's, change nothing.
func TestRouteFromTheUsersNotes(t *testing.T) {
	steps := []intents.Step{
		{Tool: "browser_navigate", Args: map[string]any{"url": "http://shop.test/"}},
		{Tool: "browser_click", Args: map[string]any{"element": "Catalogue"}},
		{Tool: "browser_navigate", Args: map[string]any{"url": "http://shop.test/all"}},
		{Tool: "browser_snapshot"},
	}
	assert.Equal(t, steps[2:], route(steps, "Notes: every book is listed at http://shop.test/all.\nHow many books?"))
	assert.Equal(t, steps, route(steps, "Notes: (none)\nHow many books?"))
	assert.Equal(t, steps, route(steps, "Start at http://shop.test/"))

	in := &intents.Intent{Baseline: intents.Baseline{Steps: steps}}
	tools := toolset{"browser_navigate": {"url"}, "browser_click": {"element", "ref"}, "browser_snapshot": nil}
	m := next(in, tools, nil, "see http://shop.test/all")
	assert.Equal(t, "browser_navigate", m.call.Name)
	assert.JSONEq(t, `{"url":"http://shop.test/all"}`, m.call.Arguments, "the first move goes where the notes point")
	m = next(in, tools, nil, "")
	assert.JSONEq(t, `{"url":"http://shop.test/"}`, m.call.Arguments)
}
