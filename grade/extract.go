package grade

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode"
)

// ErrNoAnswer is returned (wrapped) by Extract when the text holds nothing it
// can read as an answer. A trial whose final message gives this is malformed.
var ErrNoAnswer = errors.New("no answer found")

// Extract reads an answer object from an agent's final message. It is lenient
// and tries, in order:
//
//  1. Fenced blocks. A block opened by ``` or ```json (any case) whose body is
//     a JSON object. When several qualify the last one wins: agents tend to
//     show drafts or examples first and end on their answer. Fences tagged
//     with another language are ignored.
//  2. A JSON object in the text: the complete object that ends last, taking
//     the outermost one when objects nest. Braces inside JSON strings do not
//     count, so {"note": "a } b"} is read whole.
//  3. Prose: lines of the form "key: value". Bullets ("-", "*", "1."),
//     markdown emphasis and backticks around the key are dropped; the key is
//     lower-cased with spaces and dashes turned into underscores ("Country
//     code" → "country_code"). The value is trimmed of quotes, backticks and
//     emphasis and then read as: a JSON array or object when it starts with
//     [ or { and parses; a number when it is a plain decimal number
//     ("12.5", "-3", "1e3"; not "$12.50" or "1,234", which stay strings for
//     the money rules); true or false; null for "null"; otherwise the string.
//     Commas do not split a value into a list: "Tokyo, Japan" stays one
//     string, and a list must be written in brackets ([1, 2] or
//     ["a", "b"]). A later line with the same key replaces an earlier one.
//     The colon must be followed by white space, so URLs and times are not
//     read as keys.
//
// JSON numbers decode as float64. Extract returns an error wrapping
// ErrNoAnswer when none of the three finds anything.
func Extract(text string) (map[string]any, error) {
	if obj, ok := lastFencedObject(text); ok {
		return obj, nil
	}
	if obj, ok := lastObject(text); ok {
		return obj, nil
	}
	if obj, ok := proseObject(text); ok {
		return obj, nil
	}
	return nil, fmt.Errorf("extract answer: %w: no JSON object in a fence or the text, and no key: value lines", ErrNoAnswer)
}

// lastFencedObject returns the last fenced JSON block whose body is an object.
func lastFencedObject(text string) (map[string]any, bool) {
	var found map[string]any
	ok := false
	lines := strings.Split(text, "\n")
	for i := 0; i < len(lines); i++ {
		ticks, tag, isFence := openingFence(lines[i])
		if !isFence {
			continue
		}
		// Find the closing fence: a line of at least the same backticks.
		end := -1
		for j := i + 1; j < len(lines); j++ {
			if closingFence(lines[j], ticks) {
				end = j
				break
			}
		}
		if end < 0 {
			// An unclosed fence runs to the end of the text, as in
			// CommonMark.
			end = len(lines)
		}
		if tag == "" || strings.EqualFold(tag, "json") {
			body := strings.Join(lines[i+1:end], "\n")
			if obj, good := decodeObject(body); good {
				found, ok = obj, true
			}
		}
		i = end
	}
	return found, ok
}

// openingFence reports whether line opens a fenced block, returning the
// backtick run and the info string's first word.
func openingFence(line string) (ticks, tag string, ok bool) {
	s := strings.TrimLeft(line, " \t")
	n := 0
	for n < len(s) && s[n] == '`' {
		n++
	}
	if n < 3 {
		return "", "", false
	}
	info := strings.TrimSpace(s[n:])
	if strings.Contains(info, "`") {
		return "", "", false // inline code such as ```x```, not a fence
	}
	if f := strings.Fields(info); len(f) > 0 {
		tag = f[0]
	}
	return s[:n], tag, true
}

// closingFence reports whether line closes a block opened by ticks.
func closingFence(line, ticks string) bool {
	s := strings.TrimSpace(line)
	return len(s) >= len(ticks) && strings.Trim(s, "`") == ""
}

// decodeObject parses s as exactly one JSON object (surrounding space
// allowed).
func decodeObject(s string) (map[string]any, bool) {
	dec := json.NewDecoder(strings.NewReader(s))
	var obj map[string]any
	if err := dec.Decode(&obj); err != nil || obj == nil {
		return nil, false
	}
	if _, err := dec.Token(); err == nil {
		return nil, false // trailing data
	}
	return obj, true
}

// lastObject returns the complete JSON object in text that ends last, the
// outermost one when several end at the same place. It pairs braces in one
// pass (see braceSpans), then decodes the spans from the one that ends last,
// stopping at the first that is a JSON object. The bytes it decodes are
// bounded by a budget linear in the text's length, so no input makes it slow:
// past the budget it gives up, and the answer is read as prose or not at all.
func lastObject(text string) (map[string]any, bool) {
	spans := braceSpans(text)
	slices.SortFunc(spans, func(a, b span) int {
		return cmp.Or(cmp.Compare(b.end, a.end), cmp.Compare(a.start, b.start))
	})
	budget := 4*len(text) + 1<<16
	for _, sp := range spans {
		if budget -= sp.end - sp.start; budget < 0 {
			break
		}
		if obj, ok := decodeObject(text[sp.start:sp.end]); ok {
			return obj, true
		}
	}
	return nil, false
}

// span is text[start:end].
type span struct{ start, end int }

// braceSpans returns every balanced {...} in text. Quotes count as JSON
// strings only inside braces (so prose apostrophes and quotes between
// objects are ignored), and a string ends at a line break, which JSON
// strings cannot hold, so a stray quote cannot hide the rest of the text.
func braceSpans(text string) []span {
	var spans []span
	var open []int
	inString, escaped := false, false
	for i := 0; i < len(text); i++ {
		c := text[i]
		if inString {
			switch {
			case c == '\n':
				inString, escaped = false, false
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = len(open) > 0
		case '{':
			open = append(open, i)
		case '}':
			if n := len(open); n > 0 {
				spans = append(spans, span{open[n-1], i + 1})
				open = open[:n-1]
			}
		}
	}
	return spans
}

// proseObject reads "key: value" lines.
func proseObject(text string) (map[string]any, bool) {
	obj := map[string]any{}
	for _, line := range strings.Split(text, "\n") {
		key, value, ok := proseLine(line)
		if !ok {
			continue
		}
		obj[key] = proseValue(value)
	}
	return obj, len(obj) > 0
}

// proseLine splits one "key: value" line. The key must be short and made of
// letters, digits, spaces, '_', '-' and '.'.
func proseLine(line string) (key, value string, ok bool) {
	s := strings.TrimSpace(line)
	s = trimBullet(s)
	colon := strings.Index(s, ":")
	if colon <= 0 {
		return "", "", false
	}
	// "**Price:** $3" puts the closing emphasis after the colon.
	rest := strings.TrimLeft(s[colon+1:], "*_")
	if rest != "" && rest[0] != ' ' && rest[0] != '\t' {
		return "", "", false // "http://..." or "12:30"
	}
	rawKey := strings.TrimSpace(s[:colon])
	value = strings.TrimSpace(rest)
	rawKey = strings.Trim(rawKey, "*_` ")
	if rawKey == "" || len(rawKey) > 64 || value == "" {
		return "", "", false
	}
	var b strings.Builder
	for _, r := range rawKey {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' || r == '.':
			b.WriteRune(unicode.ToLower(r))
		case r == ' ' || r == '-':
			b.WriteByte('_')
		default:
			return "", "", false
		}
	}
	return b.String(), value, true
}

// trimBullet drops a leading list marker: "-", "*", "+", "•" or "1." / "1)".
func trimBullet(s string) string {
	for _, p := range []string{"- ", "* ", "+ ", "• "} {
		if strings.HasPrefix(s, p) {
			return strings.TrimSpace(s[len(p):])
		}
	}
	n := 0
	for n < len(s) && s[n] >= '0' && s[n] <= '9' {
		n++
	}
	if n > 0 && n+1 < len(s) && (s[n] == '.' || s[n] == ')') && s[n+1] == ' ' {
		return strings.TrimSpace(s[n+2:])
	}
	return s
}

// proseValue reads one prose value (see Extract).
func proseValue(s string) any {
	s = strings.TrimSpace(strings.TrimRight(s, "*_"))
	s = trimPair(s, "`", "`")
	s = trimPair(s, `"`, `"`)
	s = trimPair(s, "'", "'")
	if s == "" {
		return s
	}
	if s[0] == '[' || s[0] == '{' {
		var v any
		dec := json.NewDecoder(bytes.NewReader([]byte(s)))
		if err := dec.Decode(&v); err == nil {
			if _, err := dec.Token(); err != nil {
				return v
			}
		}
	}
	switch strings.ToLower(s) {
	case "true":
		return true
	case "false":
		return false
	case "null":
		return nil
	}
	// A plain decimal number, as JSON writes it: no thousands separators,
	// currency, hex, Inf or NaN.
	var f float64
	if json.Unmarshal([]byte(s), &f) == nil {
		return f
	}
	return s
}

func trimPair(s, open, close string) string {
	if len(s) >= len(open)+len(close) && strings.HasPrefix(s, open) && strings.HasSuffix(s, close) {
		return strings.TrimSpace(s[len(open) : len(s)-len(close)])
	}
	return s
}
