package grade

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestExtract(t *testing.T) {
	tests := []struct {
		name string
		text string
		want map[string]any
	}{
		{
			name: "json fence",
			text: "The cheapest is below.\n\n```json\n{\"price\": 12.5, \"title\": \"Dune\"}\n```\n",
			want: map[string]any{"price": 12.5, "title": "Dune"},
		},
		{
			name: "plain fence",
			text: "```\n{\"a\": 1}\n```",
			want: map[string]any{"a": 1.0},
		},
		{
			name: "last of several fences wins",
			text: "Draft:\n```json\n{\"a\": 1}\n```\nFinal:\n```json\n{\"a\": 2}\n```\nDone.",
			want: map[string]any{"a": 2.0},
		},
		{
			name: "fence of another language is ignored",
			text: "```python\n{\"a\": 1}\n```\n```json\n{\"a\": 3}\n```\n```js\n{\"a\": 4}\n```",
			want: map[string]any{"a": 3.0},
		},
		{
			name: "fence that is not an object falls through to later fence",
			text: "```json\n{\"a\": 1}\n```\n```json\n[1, 2]\n```",
			want: map[string]any{"a": 1.0},
		},
		{
			name: "unclosed fence runs to the end",
			text: "Answer:\n```json\n{\"a\": 5}",
			want: map[string]any{"a": 5.0},
		},
		{
			name: "indented fence",
			text: "  ```JSON\n  {\"a\": 6}\n  ```",
			want: map[string]any{"a": 6.0},
		},
		{
			name: "trailing object",
			text: "I found it: {\"country\": \"ZA\", \"asn\": 37153}",
			want: map[string]any{"country": "ZA", "asn": 37153.0},
		},
		{
			name: "trailing object with prose after it",
			text: "Answer {\"a\": 1} — hope that helps!",
			want: map[string]any{"a": 1.0},
		},
		{
			name: "nested braces keep the outer object",
			text: "Result: {\"a\": {\"b\": {\"c\": 1}}, \"d\": [ {\"e\": 2} ]}",
			want: map[string]any{"a": map[string]any{"b": map[string]any{"c": 1.0}}, "d": []any{map[string]any{"e": 2.0}}},
		},
		{
			name: "braces inside strings",
			text: "see {\"note\": \"a } b { c\", \"x\": \"}\"} end",
			want: map[string]any{"note": "a } b { c", "x": "}"},
		},
		{
			name: "last of several objects wins",
			text: "first {\"a\": 1} then {\"a\": 2}",
			want: map[string]any{"a": 2.0},
		},
		{
			name: "unbalanced brace before the object",
			text: "oops { not json, then {\"a\": 7}",
			want: map[string]any{"a": 7.0},
		},
		{
			name: "a stray quote inside braces ends at the line break",
			text: "Draft { note \"unclosed\nFinal: {\"a\": 8}",
			want: map[string]any{"a": 8.0},
		},
		{
			name: "quotes in prose between objects do not count",
			text: "It's \"odd\": {\"a\": 9} isn't it",
			want: map[string]any{"a": 9.0},
		},
		{
			name: "fence wins over a later bare object",
			text: "```json\n{\"a\": 1}\n```\nand {\"a\": 2}",
			want: map[string]any{"a": 1.0},
		},
		{
			name: "prose lines",
			text: "Here is what I found:\n- Country code: ZA\n- **ASN:** 37153\n* `price`: $1,234.50\n1. in stock: true\n2) tags: [\"a\", \"b\"]\nnothing: null\nTitle: \"Dune\"",
			want: map[string]any{
				"country_code": "ZA", "asn": 37153.0, "price": "$1,234.50",
				"in_stock": true, "tags": []any{"a", "b"}, "nothing": nil, "title": "Dune",
			},
		},
		{
			name: "prose commas do not split",
			text: "city: Tokyo, Japan\nids: 1, 2, 3",
			want: map[string]any{"city": "Tokyo, Japan", "ids": "1, 2, 3"},
		},
		{
			name: "prose ignores urls and times, later key wins",
			text: "see http://books.example/x\nat 12:30 today\nprice: 3\nprice: 4",
			want: map[string]any{"price": 4.0},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Extract(tt.text)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestExtractNothing(t *testing.T) {
	for _, text := range []string{
		"",
		"I could not find the answer.",
		"```json\n[1, 2, 3]\n```",
		"{not json}",
		"see https://books.example/a",
		"```json\n{\"a\": 1,}\n```",
	} {
		_, err := Extract(text)
		assert.ErrorIs(t, err, ErrNoAnswer, "Extract(%q)", text)
	}
}

func FuzzExtract(f *testing.F) {
	f.Add("prefix text", `{"a": 1, "b": "x } y", "c": [1, {"d": null}]}`, "suffix")
	f.Add("", `{}`, "")
	f.Add("```", "{\"a\": \"```\"}", "{")
	f.Add("price: $3\n", `{"k": "\u007b"}`, "}}}")
	f.Fuzz(func(t *testing.T, before, object, after string) {
		// Whatever the text, Extract must not panic.
		_, _ = Extract(before + object + after)

		// A JSON object alone in a json fence at the end of the message
		// must come back unchanged, whatever precedes it, as long as the
		// text before cannot itself open a fence that swallows ours.
		var want map[string]any
		if json.Unmarshal([]byte(object), &want) != nil || want == nil {
			return
		}
		compact, err := json.Marshal(want)
		require.NoError(t, err)
		if strings.Contains(string(compact), "\n") {
			t.Fatalf("compact JSON has a newline: %s", compact)
		}
		prefix := strings.ReplaceAll(before, "`", "'")
		text := prefix + "\n```json\n" + string(compact) + "\n```\n"
		got, err := Extract(text)
		require.NoError(t, err, "text %q", text)
		assert.Equal(t, want, got)
	})
}

func BenchmarkExtract(b *testing.B) {
	text := strings.Repeat("The page lists many books, { some in braces }. ", 200) +
		"\n```json\n{\"title\": \"Dune\", \"price\": \"$12.50\", \"items\": [1, 2, 3]}\n```\n"
	for b.Loop() {
		if _, err := Extract(text); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkExtractPathological feeds a long message of braces that never
// close followed by an answer: the work must stay linear in its length.
func BenchmarkExtractPathological(b *testing.B) {
	text := strings.Repeat(`{"a":`, 200_000) + "\n" + strings.Repeat("{x{", 50_000) + `{"price": 3}`
	for b.Loop() {
		if _, err := Extract(text); err != nil {
			b.Fatal(err)
		}
	}
}
