package grade

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/intents"
)

func bookIntent() *intents.Intent {
	return &intents.Intent{
		Pos: intents.Pos{File: "bench/intents/books.example/cheapest.yaml", Line: 1},
		ID:  "books-cheapest",
		Answer: map[string]any{
			"type":     "object",
			"required": []any{"title", "price"},
			"properties": map[string]any{
				"title": map[string]any{"type": "string", "minLength": 1},
				"price": map[string]any{"type": "string"},
				"day":   map[string]any{"type": "string", "format": "date"},
			},
		},
		Rules: []intents.Rule{
			{Pos: intents.Pos{File: "bench/intents/books.example/cheapest.yaml", Line: 12}, Kind: "equals", Field: "title", Value: "Dune", Fold: true},
			{Pos: intents.Pos{File: "bench/intents/books.example/cheapest.yaml", Line: 15}, Kind: "money_max", Field: "price", Value: "$10"},
		},
	}
}

func TestGrade(t *testing.T) {
	g, err := Compile(bookIntent())
	require.NoError(t, err)

	tests := []struct {
		name    string
		final   string
		outcome pairbench.Outcome
		reason  []string
	}{
		{
			name:    "correct from a fence",
			final:   "The cheapest is Dune.\n```json\n{\"title\": \"dune\", \"price\": \"$9.99\"}\n```",
			outcome: pairbench.Correct,
		},
		{
			name:    "correct from prose",
			final:   "Title: Dune\nPrice: $9.99",
			outcome: pairbench.Correct,
		},
		{
			name:    "malformed",
			final:   "I could not find any book.",
			outcome: pairbench.Malformed,
			reason:  []string{"no answer found"},
		},
		{
			name:    "schema: missing property",
			final:   `{"title": "Dune"}`,
			outcome: pairbench.Wrong,
			reason:  []string{"answer schema:", "price"},
		},
		{
			name:    "schema: wrong type",
			final:   `{"title": "Dune", "price": 9.99}`,
			outcome: pairbench.Wrong,
			reason:  []string{"answer schema:", "/price"},
		},
		{
			name:    "schema: format asserted",
			final:   `{"title": "Dune", "price": "$9", "day": "tomorrow"}`,
			outcome: pairbench.Wrong,
			reason:  []string{"answer schema:", "/day"},
		},
		{
			name:    "every failing rule is named",
			final:   `{"title": "Emma", "price": "$12.00"}`,
			outcome: pairbench.Wrong,
			reason: []string{
				"rule equals title (bench/intents/books.example/cheapest.yaml:12)",
				"rule money_max price (bench/intents/books.example/cheapest.yaml:15)",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := g.Grade(tt.final)
			assert.Equal(t, tt.outcome, res.Outcome, res.Reason)
			for _, r := range tt.reason {
				assert.Contains(t, res.Reason, r)
			}
			if tt.outcome == pairbench.Correct {
				assert.Empty(t, res.Reason)
			}
			if tt.outcome == pairbench.Malformed {
				assert.Nil(t, res.Extracted)
			} else {
				assert.NotNil(t, res.Extracted)
			}
		})
	}
}

func TestCheckBaselineFromYAMLTypes(t *testing.T) {
	in := &intents.Intent{
		ID:     "ints",
		Answer: map[string]any{"type": "object", "properties": map[string]any{"n": map[string]any{"type": "integer", "minimum": 3}}},
		Rules:  []intents.Rule{{Kind: "set_equals", Field: "ids", Values: []any{1, 2}}},
	}
	g, err := Compile(in)
	require.NoError(t, err)
	res := g.Check(map[string]any{"n": 4, "ids": []any{2, 1}})
	assert.Equal(t, pairbench.Correct, res.Outcome, res.Reason)
	assert.Equal(t, 4.0, res.Extracted["n"], "numbers are normalised to float64")
}

func TestCompileProblems(t *testing.T) {
	at := func(line int) intents.Pos { return intents.Pos{File: "i.yaml", Line: line} }
	in := &intents.Intent{
		Pos:    at(1),
		ID:     "bad",
		Answer: map[string]any{"type": "object", "properties": map[string]any{"x": map[string]any{"$ref": "https://elsewhere.example/s.json"}}},
		Rules: []intents.Rule{
			{Pos: at(10), Kind: "equals", Field: "a", Value: 1},   // fine
			{Pos: at(11), Kind: "eqals", Field: "a", Value: 1},    // unknown
			{Pos: at(12), Kind: "regex", Field: "a", Value: "("},  // bad pattern
			{Pos: at(13), Kind: "min", Field: "a", Value: "lots"}, // not a number
			{Pos: at(14), Kind: "len", Field: "a"},                // no bounds
			{Pos: at(15), Kind: "len", Field: "a", Min: ptr(3), Max: ptr(2)},
			{Pos: at(16), Kind: "equals", Field: "a", Value: 1, Min: ptr(1)}, // extra arg
			{Pos: at(17), Kind: "date", Field: "a", Value: "Mon Jan 2"},      // bad layout
			{Pos: at(18), Kind: "date_after", Field: "a", Value: "soon"},
			{Pos: at(19), Kind: "money_min", Field: "a", Value: "cheap"},
			{Pos: at(20), Kind: "one_of", Field: "a"},
			{Pos: at(21), Kind: "equals", Field: "a..b", Value: 1},
			{Pos: at(22), Kind: "items_above", Field: "a", Key: "k"},
			{Pos: at(23), Kind: "set_equals", Field: "a", Min: ptr(1), Values: []any{}},
		},
	}
	g, err := Compile(in)
	require.Error(t, err)
	assert.Nil(t, g)
	var probs intents.Problems
	require.True(t, errors.As(err, &probs), "Compile returns Problems, got %T", err)

	want := map[int]string{
		1:  "answer schema:",
		11: `unknown rule "eqals"`,
		12: "bad pattern",
		13: "needs a number value",
		14: "needs min or max",
		15: "min 3 is above max 2",
		16: "equals does not take min",
		17: "bad date layout",
		18: "needs an ISO date value",
		19: "needs an amount value",
		20: "needs values",
		21: "empty path segment",
		22: "needs a number value",
		23: "set_equals does not take min",
	}
	got := map[int]string{}
	for _, p := range probs {
		assert.Equal(t, "i.yaml", p.Pos.File)
		got[p.Pos.Line] = p.Msg
	}
	require.Len(t, got, len(want), "one problem per bad rule plus the schema: %v", err)
	for line, msg := range want {
		assert.Contains(t, got[line], msg, "line %d", line)
	}
	assert.Contains(t, err.Error(), "i.yaml:11: rule 2 (eqals a): unknown rule")
}

func TestCompileLocalRefsAndAnyID(t *testing.T) {
	schema := map[string]any{
		"type":       "object",
		"properties": map[string]any{"a": map[string]any{"$ref": "#/$defs/name"}},
		"$defs":      map[string]any{"name": map[string]any{"type": "string"}},
	}
	for _, id := range []string{"books-cheapest", "x#y", "a b", ""} {
		g, err := Compile(&intents.Intent{ID: id, Answer: schema})
		require.NoError(t, err, "id %q", id)
		assert.Equal(t, pairbench.Wrong, g.Check(map[string]any{"a": 1}).Outcome, "the $ref is followed")
		assert.Equal(t, pairbench.Correct, g.Check(map[string]any{"a": "x"}).Outcome)
	}
}

func TestCompileMissingSchema(t *testing.T) {
	_, err := Compile(&intents.Intent{Pos: intents.Pos{File: "a.yaml", Line: 3}, ID: "x"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "a.yaml:3: answer schema: missing")
}
