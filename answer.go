package pairbench

import (
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// Price reads a money amount. Numbers are taken as they are. Strings may carry
// a currency symbol or code before or after the amount ("$1,234.50",
// "1.234,50 €", "USD 12", "12.5 EUR") and a leading minus sign. Separators:
//
//   - when both ',' and '.' appear, the last one is the decimal separator
//     and the other groups thousands ("1,234.50" and "1.234,50" are both
//     1234.5);
//   - a ',' or '.' that appears more than once groups thousands
//     ("1.234.567" is 1234567);
//   - a single ',' followed by exactly three digits groups thousands
//     ("1,234" is 1234, as in English), any other single ',' is a decimal
//     comma ("12,50" is 12.5);
//   - a single '.' is always a decimal point ("1.234" is 1.234).
//
// Spaces (also non-breaking) and apostrophes may group thousands too
// ("1 234,50", "1'234.50"). Thousands groups after the first must have three
// digits. Price returns false for anything else, including "free", ranges
// and non-finite numbers. Grading and the report's cheapest-price agreement check both use it.
func Price(v any) (float64, bool) {
	if s, ok := v.(string); ok {
		return parseMoney(s)
	}
	return Number(v)
}

func parseMoney(s string) (float64, bool) {
	s = strings.TrimSpace(s)
	neg := false
	// Strip a currency prefix and suffix (symbols, letters such as "USD" or
	// "US$", and the spaces around them), allowing a minus on either side of
	// the prefix.
	isCurrency := func(r rune) bool {
		return unicode.Is(unicode.Sc, r) || unicode.IsLetter(r) || unicode.IsSpace(r) || r == '\u00a0'
	}
	if strings.HasPrefix(s, "-") {
		neg, s = true, s[1:]
	}
	s = strings.TrimLeftFunc(s, isCurrency)
	if !neg && strings.HasPrefix(s, "-") {
		neg, s = true, s[1:]
	}
	s = strings.TrimRightFunc(s, isCurrency)
	if s == "" || s[0] < '0' || s[0] > '9' {
		return 0, false
	}
	// Split into digit groups and the separators between them; spaces and
	// apostrophes can only group thousands.
	var digits strings.Builder
	var seps []rune // the separators in order, one per group boundary
	var groups []int
	n := 0
	for _, r := range s {
		switch {
		case r >= '0' && r <= '9':
			digits.WriteRune(r)
			n++
		case r == ',' || r == '.' || r == ' ' || r == '\u00a0' || r == '\'' || r == '\u202f':
			if n == 0 {
				return 0, false // two separators in a row
			}
			seps = append(seps, r)
			groups = append(groups, n)
			n = 0
		default:
			return 0, false
		}
	}
	if n == 0 {
		return 0, false // ends on a separator
	}
	groups = append(groups, n)
	// groups[i] digits precede seps[i]; groups[len(seps)] is the last group.
	decimal := -1 // index in seps of the decimal separator, if any
	if len(seps) > 0 {
		last := len(seps) - 1
		lr := seps[last]
		count := 0
		for _, r := range seps {
			if r == lr {
				count++
			}
		}
		mixed := slices.ContainsFunc(seps, func(r rune) bool { return r != lr })
		switch {
		case lr != ',' && lr != '.':
			// space or apostrophe last: thousands only
		case mixed && count == 1:
			decimal = last
		case mixed:
			return 0, false // "1,234,5.6": ambiguous
		case count > 1:
			// repeated: thousands only
		case lr == ',' && groups[last+1] == 3:
			// "1,234": thousands
		default:
			decimal = last
		}
	}
	// Every thousands group after the first has three digits.
	intGroups := len(groups)
	if decimal >= 0 {
		intGroups = decimal + 1
	}
	for i := 1; i < intGroups; i++ {
		if groups[i] != 3 {
			return 0, false
		}
	}
	all := digits.String()
	intDigits := 0
	for i := 0; i < intGroups; i++ {
		intDigits += groups[i]
	}
	num := all[:intDigits]
	if decimal >= 0 {
		num += "." + all[intDigits:]
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || math.IsInf(f, 0) {
		return 0, false
	}
	if neg {
		f = -f
	}
	return f, true
}

// AsSet normalises an answer value to a sorted set of strings, for comparing
// two answers "as sets". A list gives one element per item; any other value
// is a set of one; nil gives the empty set. Each element is normalised:
// strings are trimmed, runs of white space become one space and letters are
// lower-cased; numbers, and strings that are plain decimal numbers, are
// written in their shortest form (3, "3" and 3.0 are all "3"); booleans are
// "true"/"false"; objects and nested lists are written as JSON with sorted
// keys after the same normalisation of their strings and numbers.
// Duplicates collapse. Grading and the report's "same" agreement check both use it.
func AsSet(v any) []string {
	var items []any
	switch x := v.(type) {
	case nil:
		return []string{}
	case []any:
		items = x
	default:
		items = []any{x}
	}
	out := make([]string, 0, len(items))
	for _, it := range items {
		out = append(out, Canon(it, true))
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Canon writes one answer value in the normal form AsSet describes; fold
// lower-cases strings. Two values compare equal as answers when their Canon
// forms are equal.
func Canon(v any, fold bool) string {
	switch x := v.(type) {
	case string:
		if f, ok := Number(x); ok {
			return formatNumber(f)
		}
		return normString(x, fold)
	case bool:
		return strconv.FormatBool(x)
	case nil:
		return "null"
	}
	if f, ok := Number(v); ok {
		return formatNumber(f)
	}
	b, err := json.Marshal(normValue(v, fold))
	if err != nil {
		return "" // unreachable for values decoded from JSON or YAML
	}
	return string(b)
}

// normValue applies canon's string and number normalisation inside lists and
// objects, so they marshal to a canonical form.
func normValue(v any, fold bool) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = normValue(e, fold)
		}
		return m
	case []any:
		l := make([]any, len(x))
		for i, e := range x {
			l[i] = normValue(e, fold)
		}
		return l
	case string:
		if f, ok := Number(x); ok {
			return f
		}
		return normString(x, fold)
	}
	if f, ok := Number(v); ok {
		return f
	}
	return v
}

func normString(s string, fold bool) string {
	s = strings.Join(strings.Fields(s), " ")
	if fold {
		s = strings.ToLower(s)
	}
	return s
}

func formatNumber(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// Number reads a numeric value: any Go number type, json.Number, or a string
// holding a plain decimal number (surrounding space allowed). It returns
// false for anything else and for non-finite values.
func Number(v any) (float64, bool) {
	var f float64
	switch x := v.(type) {
	case float64:
		f = x
	case float32:
		f = float64(x)
	case int:
		f = float64(x)
	case int8:
		f = float64(x)
	case int16:
		f = float64(x)
	case int32:
		f = float64(x)
	case int64:
		f = float64(x)
	case uint:
		f = float64(x)
	case uint8:
		f = float64(x)
	case uint16:
		f = float64(x)
	case uint32:
		f = float64(x)
	case uint64:
		f = float64(x)
	case json.Number:
		g, err := x.Float64()
		if err != nil {
			return 0, false
		}
		f = g
	case string:
		if json.Unmarshal([]byte(strings.TrimSpace(x)), &f) != nil {
			return 0, false
		}
	default:
		return 0, false
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, false
	}
	return f, true
}

// Lookup follows a dotted path into an answer: "a.b" reads key b of object a,
// and a segment that is a decimal integer indexes a list ("items.0.id"). The
// empty path is the whole answer. Keys that contain dots cannot be named.
func Lookup(answer map[string]any, path string) (any, bool) {
	var cur any = answer
	if path == "" {
		return cur, true
	}
	for _, seg := range strings.Split(path, ".") {
		switch x := cur.(type) {
		case map[string]any:
			v, ok := x[seg]
			if !ok {
				return nil, false
			}
			cur = v
		case []any:
			i, err := strconv.Atoi(seg)
			if err != nil || i < 0 || i >= len(x) {
				return nil, false
			}
			cur = x[i]
		default:
			return nil, false
		}
	}
	return cur, true
}
