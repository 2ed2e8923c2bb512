package grade

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench/intents"
)

func ptr(f float64) *float64 { return &f }

// TestRules checks every rule kind on an answer that passes it and one that
// fails it, with the failure reason's gist.
func TestRules(t *testing.T) {
	tests := []struct {
		name     string
		rule     intents.Rule
		pass     map[string]any
		fail     map[string]any
		failWhy  string
		failWhy2 string // optional second fragment of the reason
	}{
		{
			name: "equals string folds and trims",
			rule: intents.Rule{Kind: "equals", Field: "country", Value: "za", Fold: true},
			pass: map[string]any{"country": "  ZA "},
			fail: map[string]any{"country": "ZW"}, failWhy: `got "ZW", want "za"`,
		},
		{
			name: "equals without fold is case-sensitive",
			rule: intents.Rule{Kind: "equals", Field: "country", Value: "ZA"},
			pass: map[string]any{"country": "ZA"},
			fail: map[string]any{"country": "za"}, failWhy: `want "ZA"`,
		},
		{
			name: "equals number accepts a numeric string and a YAML int",
			rule: intents.Rule{Kind: "equals", Field: "asn", Value: 37153},
			pass: map[string]any{"asn": "37153"},
			fail: map[string]any{"asn": 37154.0}, failWhy: "got 37154, want 37153",
		},
		{
			name: "equals nested path with list index",
			rule: intents.Rule{Kind: "equals", Field: "items.1.id", Value: "b"},
			pass: map[string]any{"items": []any{map[string]any{"id": "a"}, map[string]any{"id": "b"}}},
			fail: map[string]any{"items": []any{map[string]any{"id": "b"}}}, failWhy: `field "items.1.id" missing`,
		},
		{
			name: "one_of",
			rule: intents.Rule{Kind: "one_of", Field: "license", Values: []any{"Apache-2.0", "MIT"}},
			pass: map[string]any{"license": "MIT"},
			fail: map[string]any{"license": "GPL-3.0"}, failWhy: "want one of",
		},
		{
			name: "regex",
			rule: intents.Rule{Kind: "regex", Field: "tag", Value: `^v\d+\.\d+\.\d+$`},
			pass: map[string]any{"tag": "v1.52.0"},
			fail: map[string]any{"tag": "release-1"}, failWhy: "does not match",
		},
		{
			name: "regex fold and numbers",
			rule: intents.Rule{Kind: "regex", Field: "n", Value: `^4\d$`, Fold: true},
			pass: map[string]any{"n": 42.0},
			fail: map[string]any{"n": true}, failWhy: "want a string",
		},
		{
			name: "min",
			rule: intents.Rule{Kind: "min", Field: "stars", Value: 95000},
			pass: map[string]any{"stars": 95000.0},
			fail: map[string]any{"stars": 94999.0}, failWhy: "want at least 95000",
		},
		{
			name: "min needs a number",
			rule: intents.Rule{Kind: "min", Field: "stars", Value: 1},
			pass: map[string]any{"stars": "12"},
			fail: map[string]any{"stars": "many"}, failWhy: "want a number",
		},
		{
			name: "max",
			rule: intents.Rule{Kind: "max", Field: "temp", Value: 40.5},
			pass: map[string]any{"temp": -3.0},
			fail: map[string]any{"temp": 41.0}, failWhy: "want at most 40.5",
		},
		{
			name: "money equals to the cent",
			rule: intents.Rule{Kind: "money", Field: "price", Value: "$1,234.50"},
			pass: map[string]any{"price": "1.234,50 €"},
			fail: map[string]any{"price": "$1,234.51"}, failWhy: "want 1234.5",
		},
		{
			name: "money_min",
			rule: intents.Rule{Kind: "money_min", Field: "fare", Value: 1},
			pass: map[string]any{"fare": "$1.00"},
			fail: map[string]any{"fare": "$0.99"}, failWhy: "want at least 1",
		},
		{
			name: "money_max rejects what is not money",
			rule: intents.Rule{Kind: "money_max", Field: "fare", Value: "$20"},
			pass: map[string]any{"fare": 19.99},
			fail: map[string]any{"fare": "free"}, failWhy: "want an amount",
		},
		{
			name: "money_max",
			rule: intents.Rule{Kind: "money_max", Field: "fare", Value: "$20"},
			pass: map[string]any{"fare": "USD 20"},
			fail: map[string]any{"fare": "$20.01"}, failWhy: "want at most 20",
		},
		{
			name: "date iso",
			rule: intents.Rule{Kind: "date", Field: "day"},
			pass: map[string]any{"day": "2026-03-01"},
			fail: map[string]any{"day": "March 1"}, failWhy: "want an ISO 8601 date",
		},
		{
			name: "date with layout",
			rule: intents.Rule{Kind: "date", Field: "day", Value: "DD/MM/YYYY"},
			pass: map[string]any{"day": "01/03/2026"},
			fail: map[string]any{"day": "2026-03-01"}, failWhy: "want a date like DD/MM/YYYY",
		},
		{
			name: "date_after compares calendar dates",
			rule: intents.Rule{Kind: "date_after", Field: "published", Value: "2026-01-01"},
			pass: map[string]any{"published": "2026-01-02T00:30:00+05:00"},
			fail: map[string]any{"published": "2026-01-01T23:59:00Z"}, failWhy: `want a date after "2026-01-01"`,
		},
		{
			name: "date_after instants",
			rule: intents.Rule{Kind: "date_after", Field: "at", Value: "2026-01-01T12:00:00Z"},
			pass: map[string]any{"at": "2026-01-01T13:00:00+00:30"},
			fail: map[string]any{"at": "2026-01-01T13:00:00+01:00"}, failWhy: "want a date after",
		},
		{
			name: "date_before",
			rule: intents.Rule{Kind: "date_before", Field: "day", Value: "2026-06-01"},
			pass: map[string]any{"day": "2026-05-31"},
			fail: map[string]any{"day": "2026-06-01"}, failWhy: "want a date before",
		},
		{
			name: "len",
			rule: intents.Rule{Kind: "len", Field: "issues", Min: ptr(2), Max: ptr(3)},
			pass: map[string]any{"issues": []any{1.0, 2.0}},
			fail: map[string]any{"issues": []any{1.0, 2.0, 3.0, 4.0}}, failWhy: "4 items, want at most 3",
		},
		{
			name: "len of a non-list",
			rule: intents.Rule{Kind: "len", Field: "issues", Min: ptr(1)},
			pass: map[string]any{"issues": []any{"x"}},
			fail: map[string]any{"issues": "x"}, failWhy: "want a list",
		},
		{
			name: "distinct",
			rule: intents.Rule{Kind: "distinct", Field: "ids"},
			pass: map[string]any{"ids": []any{1.0, 2.0, "3"}},
			fail: map[string]any{"ids": []any{1.0, 2.0, "2"}}, failWhy: "items 1 and 2",
		},
		{
			name: "distinct by key with fold",
			rule: intents.Rule{Kind: "distinct", Field: "films", Key: "title", Fold: true},
			pass: map[string]any{"films": []any{map[string]any{"title": "Dune"}, map[string]any{"title": "Alien"}}},
			fail: map[string]any{"films": []any{map[string]any{"title": "Dune"}, map[string]any{"title": "DUNE"}}}, failWhy: "items 0 and 1",
		},
		{
			name: "items_above",
			rule: intents.Rule{Kind: "items_above", Field: "issues", Key: "number", Value: 36000},
			pass: map[string]any{"issues": []any{map[string]any{"number": 36001.0}, map[string]any{"number": "40000"}}},
			fail: map[string]any{"issues": []any{map[string]any{"number": 36001.0}, map[string]any{"number": 36000.0}}}, failWhy: "item 1 is 36000, want above 36000",
		},
		{
			name: "items_above missing key",
			rule: intents.Rule{Kind: "items_above", Field: "issues", Key: "number", Value: 1},
			pass: map[string]any{"issues": []any{}},
			fail: map[string]any{"issues": []any{map[string]any{"id": 3.0}}}, failWhy: `item 0 has no "number"`,
		},
		{
			name: "set_equals",
			rule: intents.Rule{Kind: "set_equals", Field: "repos", Values: []any{"a/x", "b/y"}, Fold: true},
			pass: map[string]any{"repos": []any{"B/Y", "a/x", "a/x"}},
			fail: map[string]any{"repos": []any{"a/x", "c/z"}}, failWhy: "missing b/y", failWhy2: "unexpected c/z",
		},
		{
			name: "set_equals single value and key",
			rule: intents.Rule{Kind: "set_equals", Field: "best", Key: "id", Values: []any{7}},
			pass: map[string]any{"best": map[string]any{"id": "7"}},
			fail: map[string]any{"best": []any{map[string]any{"id": 7.0}, map[string]any{"id": 8.0}}}, failWhy: "unexpected 8",
		},
		{
			name: "whole answer field",
			rule: intents.Rule{Kind: "set_equals", Values: []any{map[string]any{"a": 1}}},
			pass: map[string]any{"a": 1.0},
			fail: map[string]any{"a": 2.0}, failWhy: "missing",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.rule.Pos = intents.Pos{File: "bench/intents/x/y.yaml", Line: 9}
			g, err := Compile(&intents.Intent{ID: "x", Answer: map[string]any{"type": "object"}, Rules: []intents.Rule{tt.rule}})
			require.NoError(t, err)

			res := g.Check(tt.pass)
			assert.Equal(t, "correct", string(res.Outcome), "pass case: %s", res.Reason)

			res = g.Check(tt.fail)
			assert.Equal(t, "wrong", string(res.Outcome))
			assert.Contains(t, res.Reason, tt.failWhy)
			assert.Contains(t, res.Reason, tt.failWhy2)
			assert.Contains(t, res.Reason, "(bench/intents/x/y.yaml:9)", "the reason names the rule's position")
			assert.Contains(t, res.Reason, "rule "+tt.rule.Kind, "the reason names the rule")
		})
	}
}

// TestRuleMissingField checks every kind fails, naming the field, when the
// field is absent.
func TestRuleMissingField(t *testing.T) {
	args := map[string]intents.Rule{
		"equals": {Value: 1}, "one_of": {Values: []any{1}}, "regex": {Value: "x"},
		"min": {Value: 1}, "max": {Value: 1}, "money": {Value: 1}, "money_min": {Value: 1},
		"money_max": {Value: 1}, "date": {}, "date_after": {Value: "2026-01-01"},
		"date_before": {Value: "2026-01-01"}, "len": {Min: ptr(1)}, "distinct": {},
		"items_above": {Value: 1}, "set_equals": {Values: []any{1}},
	}
	require.ElementsMatch(t, Kinds(), keys(args), "every kind is covered")
	for kind, r := range args {
		r.Kind, r.Field = kind, "gone"
		g, err := Compile(&intents.Intent{Answer: map[string]any{}, Rules: []intents.Rule{r}})
		require.NoError(t, err, kind)
		res := g.Check(map[string]any{"other": 1})
		assert.Equal(t, "wrong", string(res.Outcome), kind)
		assert.Contains(t, res.Reason, `field "gone" missing`, kind)
	}
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
