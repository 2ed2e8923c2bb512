package grade

import (
	"errors"
	"fmt"
	"github.com/pairbench/pairbench"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pairbench/pairbench/intents"
)

// Rule kinds. Each rule reads the answer value at its Field (a dotted path,
// see intents.Rule) and fails, naming itself, when the field is missing.
//
//	equals       Value; the field equals Value after normalisation: numbers
//	             compare numerically ("3" equals 3), strings are trimmed with
//	             inner white space collapsed, Fold ignores case; lists and
//	             objects compare element by element.
//	one_of       Values; the field equals (as for equals) one of Values.
//	regex        Value, a Go (RE2) pattern; the field, a string or number,
//	             matches it anywhere (anchor with ^ and $). Fold adds (?i).
//	min, max     Value, a number; the field is a number (or a string holding
//	             a plain number) at least / at most Value.
//	money        Value, an amount; the field read by Price equals it to the
//	             cent.
//	money_min,   Value, an amount; the field read by Price is at least / at
//	money_max    most Value.
//	date         optional Value, a layout built from YYYY, MM, DD, hh, mm, ss
//	             and the separators - / . : space T ("DD/MM/YYYY"); the
//	             field is a date in that layout, or without Value an ISO 8601
//	             date (2026-03-01) or date-time (RFC 3339, or without offset).
//	date_after,  Value, an ISO date or date-time; the field (ISO, as for
//	date_before  date) is strictly after / before it. When either side is a
//	             date without a time, the calendar dates are compared.
//	len          Min and/or Max; the field is a list with that many items
//	             (inclusive).
//	distinct     optional Key, Fold; the field is a list whose items (or the
//	             items' Key, a dotted path inside each item) are pairwise
//	             different after normalisation.
//	items_above  Value, a number; optional Key; every item of the list (or
//	             its Key) is a number, or an amount Price reads, strictly
//	             above Value. An empty list passes; pair with len.
//	set_equals   Values; optional Key, Fold; the list (a single value counts
//	             as a list of one) equals Values as a set.
const (
	KindEquals     = "equals"
	KindOneOf      = "one_of"
	KindRegex      = "regex"
	KindMin        = "min"
	KindMax        = "max"
	KindMoney      = "money"
	KindMoneyMin   = "money_min"
	KindMoneyMax   = "money_max"
	KindDate       = "date"
	KindDateAfter  = "date_after"
	KindDateBefore = "date_before"
	KindLen        = "len"
	KindDistinct   = "distinct"
	KindItemsAbove = "items_above"
	KindSetEquals  = "set_equals"
)

// arg names a rule argument, for validation messages.
type arg string

const (
	argValue  arg = "value"
	argValues arg = "values"
	argMin    arg = "min"
	argMax    arg = "max"
	argKey    arg = "key"
	argFold   arg = "fold"
)

// spec returns the arguments a rule kind accepts and its compiler; ok is
// false for an unknown kind.
func spec(kind string) (args []arg, compile func(intents.Rule) (check, error), ok bool) {
	switch kind {
	case KindEquals:
		return []arg{argValue, argFold}, compileEquals, true
	case KindOneOf:
		return []arg{argValues, argFold}, compileOneOf, true
	case KindRegex:
		return []arg{argValue, argFold}, compileRegex, true
	case KindMin:
		return []arg{argValue}, compileBound(false), true
	case KindMax:
		return []arg{argValue}, compileBound(true), true
	case KindMoney:
		return []arg{argValue}, compileMoney(0), true
	case KindMoneyMin:
		return []arg{argValue}, compileMoney(1), true
	case KindMoneyMax:
		return []arg{argValue}, compileMoney(-1), true
	case KindDate:
		return []arg{argValue}, compileDate, true
	case KindDateAfter:
		return []arg{argValue}, compileDateOrder(true), true
	case KindDateBefore:
		return []arg{argValue}, compileDateOrder(false), true
	case KindLen:
		return []arg{argMin, argMax}, compileLen, true
	case KindDistinct:
		return []arg{argKey, argFold}, compileDistinct, true
	case KindItemsAbove:
		return []arg{argValue, argKey}, compileItemsAbove, true
	case KindSetEquals:
		return []arg{argValues, argKey, argFold}, compileSetEquals, true
	}
	return nil, nil, false
}

// Kinds returns every rule kind grade knows, sorted.
func Kinds() []string {
	return []string{
		KindDate, KindDateAfter, KindDateBefore, KindDistinct, KindEquals,
		KindItemsAbove, KindLen, KindMax, KindMin, KindMoney, KindMoneyMax,
		KindMoneyMin, KindOneOf, KindRegex, KindSetEquals,
	}
}

// check evaluates a compiled rule on the value found at its field.
type check func(v any) error

// rule is a compiled intents.Rule.
type rule struct {
	src   intents.Rule
	check check
}

// eval runs r on answer and returns why it failed, or nil.
func (r rule) eval(answer map[string]any) error {
	v, ok := pairbench.Lookup(answer, r.src.Field)
	if !ok {
		return fmt.Errorf("field %q missing", r.src.Field)
	}
	return r.check(v)
}

// name is how reasons and problems refer to the rule.
func (r rule) name() string { return ruleName(r.src) }

func ruleName(r intents.Rule) string {
	if r.Field == "" {
		return r.Kind
	}
	return fmt.Sprintf("%s %s", r.Kind, r.Field)
}

// compileRule validates r's kind, field and arguments and compiles it.
func compileRule(r intents.Rule) (rule, error) {
	args, compile, ok := spec(r.Kind)
	if !ok {
		return rule{}, fmt.Errorf("unknown rule %q (known: %s)", r.Kind, strings.Join(Kinds(), ", "))
	}
	if r.Field != "" && slices.Contains(strings.Split(r.Field, "."), "") {
		return rule{}, fmt.Errorf("field %q has an empty path segment", r.Field)
	}
	present := map[arg]bool{
		argValue:  r.Value != nil,
		argValues: r.Values != nil,
		argMin:    r.Min != nil,
		argMax:    r.Max != nil,
		argKey:    r.Key != "",
		argFold:   r.Fold,
	}
	var extra []string
	for _, a := range []arg{argValue, argValues, argMin, argMax, argKey, argFold} {
		if present[a] && !slices.Contains(args, a) {
			extra = append(extra, string(a))
		}
	}
	if len(extra) > 0 {
		return rule{}, fmt.Errorf("%s does not take %s", r.Kind, strings.Join(extra, ", "))
	}
	c, err := compile(r)
	if err != nil {
		return rule{}, err
	}
	return rule{src: r, check: c}, nil
}

var errNeedValue = errors.New("needs a value")

func compileEquals(r intents.Rule) (check, error) {
	if r.Value == nil {
		return nil, errNeedValue
	}
	want := pairbench.Canon(r.Value, r.Fold)
	return func(v any) error {
		if pairbench.Canon(v, r.Fold) != want {
			return fmt.Errorf("got %s, want %s", show(v), show(r.Value))
		}
		return nil
	}, nil
}

func compileOneOf(r intents.Rule) (check, error) {
	if len(r.Values) == 0 {
		return nil, errors.New("needs values")
	}
	want := make([]string, len(r.Values))
	for i, x := range r.Values {
		want[i] = pairbench.Canon(x, r.Fold)
	}
	return func(v any) error {
		if !slices.Contains(want, pairbench.Canon(v, r.Fold)) {
			return fmt.Errorf("got %s, want one of %s", show(v), show(r.Values))
		}
		return nil
	}, nil
}

func compileRegex(r intents.Rule) (check, error) {
	pat, ok := r.Value.(string)
	if !ok || pat == "" {
		return nil, errors.New("needs a pattern (a string value)")
	}
	if r.Fold {
		pat = "(?i)" + pat
	}
	re, err := regexp.Compile(pat)
	if err != nil {
		return nil, fmt.Errorf("bad pattern: %w", err)
	}
	return func(v any) error {
		var s string
		switch x := v.(type) {
		case string:
			s = x
		default:
			f, ok := pairbench.Number(v)
			if !ok {
				return fmt.Errorf("got %s, want a string matching %s", show(v), re)
			}
			s = formatNumber(f)
		}
		if !re.MatchString(s) {
			return fmt.Errorf("%s does not match %s", show(s), re)
		}
		return nil
	}, nil
}

func compileBound(isMax bool) func(intents.Rule) (check, error) {
	return func(r intents.Rule) (check, error) {
		bound, ok := pairbench.Number(r.Value)
		if !ok {
			return nil, errors.New("needs a number value")
		}
		return func(v any) error {
			f, ok := pairbench.Number(v)
			switch {
			case !ok:
				return fmt.Errorf("got %s, want a number", show(v))
			case isMax && f > bound:
				return fmt.Errorf("got %s, want at most %s", formatNumber(f), formatNumber(bound))
			case !isMax && f < bound:
				return fmt.Errorf("got %s, want at least %s", formatNumber(f), formatNumber(bound))
			}
			return nil
		}, nil
	}
}

// compileMoney compiles money (sign 0), money_min (1) and money_max (-1).
func compileMoney(sign int) func(intents.Rule) (check, error) {
	return func(r intents.Rule) (check, error) {
		bound, ok := pairbench.Price(r.Value)
		if !ok {
			return nil, fmt.Errorf("needs an amount value, got %s", show(r.Value))
		}
		return func(v any) error {
			p, ok := pairbench.Price(v)
			switch {
			case !ok:
				return fmt.Errorf("got %s, want an amount", show(v))
			case sign == 0 && math.Abs(p-bound) >= 0.005:
				return fmt.Errorf("got %s, want %s", show(v), formatNumber(bound))
			case sign > 0 && p < bound:
				return fmt.Errorf("got %s, want at least %s", show(v), formatNumber(bound))
			case sign < 0 && p > bound:
				return fmt.Errorf("got %s, want at most %s", show(v), formatNumber(bound))
			}
			return nil
		}, nil
	}
}

func compileDate(r intents.Rule) (check, error) {
	if r.Value == nil {
		return func(v any) error {
			if _, _, ok := parseDate(v); !ok {
				return fmt.Errorf("got %s, want an ISO 8601 date", show(v))
			}
			return nil
		}, nil
	}
	layout, ok := r.Value.(string)
	if !ok {
		return nil, fmt.Errorf("layout must be a string, got %s", show(r.Value))
	}
	goLayout, err := dateLayout(layout)
	if err != nil {
		return nil, err
	}
	return func(v any) error {
		s, ok := v.(string)
		if !ok {
			return fmt.Errorf("got %s, want a date like %s", show(v), layout)
		}
		if _, err := time.Parse(goLayout, strings.TrimSpace(s)); err != nil {
			return fmt.Errorf("got %s, want a date like %s", show(v), layout)
		}
		return nil
	}, nil
}

// dateLayout turns a YYYY/MM/DD/hh/mm/ss layout into a Go time layout. Only
// those tokens and the separators - / . : space T are allowed, so no other
// text can be mistaken for a Go layout element.
func dateLayout(layout string) (string, error) {
	tokens := []struct{ in, out string }{
		{"YYYY", "2006"}, {"MM", "01"}, {"DD", "02"}, {"hh", "15"}, {"mm", "04"}, {"ss", "05"},
	}
	var b strings.Builder
	for s := layout; s != ""; {
		matched := false
		for _, t := range tokens {
			if strings.HasPrefix(s, t.in) {
				b.WriteString(t.out)
				s = s[len(t.in):]
				matched = true
				break
			}
		}
		if matched {
			continue
		}
		if !strings.ContainsRune("-/.: T", rune(s[0])) {
			return "", fmt.Errorf("bad date layout %q: only YYYY, MM, DD, hh, mm, ss and - / . : space T", layout)
		}
		b.WriteByte(s[0])
		s = s[1:]
	}
	if layout == "" {
		return "", errors.New("empty date layout")
	}
	return b.String(), nil
}

// parseDate reads an ISO date or date-time; dateOnly is true for a bare date.
func parseDate(v any) (t time.Time, dateOnly, ok bool) {
	if tt, isTime := v.(time.Time); isTime {
		return tt, false, true
	}
	s, isString := v.(string)
	if !isString {
		return time.Time{}, false, false
	}
	s = strings.TrimSpace(s)
	// The date and date-time forms accepted; the first is date-only.
	layouts := [...]string{
		"2006-01-02",
		time.RFC3339Nano,
		"2006-01-02T15:04:05",
		"2006-01-02T15:04",
		"2006-01-02 15:04:05",
		"2006-01-02 15:04",
	}
	for i, l := range layouts {
		if t, err := time.Parse(l, s); err == nil {
			return t, i == 0, true
		}
	}
	return time.Time{}, false, false
}

func compileDateOrder(after bool) func(intents.Rule) (check, error) {
	word := "before"
	if after {
		word = "after"
	}
	return func(r intents.Rule) (check, error) {
		bound, boundDateOnly, ok := parseDate(r.Value)
		if !ok {
			return nil, fmt.Errorf("needs an ISO date value, got %s", show(r.Value))
		}
		return func(v any) error {
			t, dateOnly, ok := parseDate(v)
			if !ok {
				return fmt.Errorf("got %s, want an ISO 8601 date", show(v))
			}
			var cmp int
			if dateOnly || boundDateOnly {
				cmp = compareDates(t, bound)
			} else {
				cmp = t.Compare(bound)
			}
			if (after && cmp <= 0) || (!after && cmp >= 0) {
				return fmt.Errorf("got %s, want a date %s %s", show(v), word, show(r.Value))
			}
			return nil
		}, nil
	}
}

// compareDates compares the calendar dates of a and b, each as written (in
// its own offset).
func compareDates(a, b time.Time) int {
	ay, am, ad := a.Date()
	by, bm, bd := b.Date()
	return time.Date(ay, am, ad, 0, 0, 0, 0, time.UTC).Compare(time.Date(by, bm, bd, 0, 0, 0, 0, time.UTC))
}

func compileLen(r intents.Rule) (check, error) {
	if r.Min == nil && r.Max == nil {
		return nil, errors.New("needs min or max")
	}
	for _, b := range []*float64{r.Min, r.Max} {
		if b != nil && (*b < 0 || *b != math.Trunc(*b)) {
			return nil, fmt.Errorf("bounds must be whole numbers ≥ 0, got %s", formatNumber(*b))
		}
	}
	if r.Min != nil && r.Max != nil && *r.Min > *r.Max {
		return nil, fmt.Errorf("min %s is above max %s", formatNumber(*r.Min), formatNumber(*r.Max))
	}
	return func(v any) error {
		l, ok := v.([]any)
		if !ok {
			return fmt.Errorf("got %s, want a list", show(v))
		}
		n := float64(len(l))
		if r.Min != nil && n < *r.Min {
			return fmt.Errorf("%d items, want at least %s", len(l), formatNumber(*r.Min))
		}
		if r.Max != nil && n > *r.Max {
			return fmt.Errorf("%d items, want at most %s", len(l), formatNumber(*r.Max))
		}
		return nil
	}, nil
}

// items returns the list's items, or their Key when key is set.
func items(v any, key string) ([]any, error) {
	l, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("got %s, want a list", show(v))
	}
	if key == "" {
		return l, nil
	}
	out := make([]any, len(l))
	for i, it := range l {
		m, ok := it.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("item %d is %s, want an object with %q", i, show(it), key)
		}
		x, ok := pairbench.Lookup(m, key)
		if !ok {
			return nil, fmt.Errorf("item %d has no %q", i, key)
		}
		out[i] = x
	}
	return out, nil
}

func compileDistinct(r intents.Rule) (check, error) {
	return func(v any) error {
		its, err := items(v, r.Key)
		if err != nil {
			return err
		}
		seen := map[string]int{}
		for i, it := range its {
			c := pairbench.Canon(it, r.Fold)
			if j, dup := seen[c]; dup {
				return fmt.Errorf("items %d and %d are both %s", j, i, show(it))
			}
			seen[c] = i
		}
		return nil
	}, nil
}

func compileItemsAbove(r intents.Rule) (check, error) {
	bound, ok := pairbench.Number(r.Value)
	if !ok {
		return nil, errors.New("needs a number value")
	}
	return func(v any) error {
		its, err := items(v, r.Key)
		if err != nil {
			return err
		}
		for i, it := range its {
			f, ok := pairbench.Number(it)
			if !ok {
				f, ok = pairbench.Price(it)
			}
			if !ok {
				return fmt.Errorf("item %d is %s, want a number", i, show(it))
			}
			if f <= bound {
				return fmt.Errorf("item %d is %s, want above %s", i, formatNumber(f), formatNumber(bound))
			}
		}
		return nil
	}, nil
}

func compileSetEquals(r intents.Rule) (check, error) {
	if r.Values == nil {
		return nil, errors.New("needs values")
	}
	want := canonSet(r.Values, r.Fold)
	return func(v any) error {
		if _, isList := v.([]any); !isList {
			v = []any{v}
		}
		its, err := items(v, r.Key)
		if err != nil {
			return err
		}
		got := canonSet(its, r.Fold)
		var missing, extra []string
		for k := range want {
			if !got[k] {
				missing = append(missing, k)
			}
		}
		for k := range got {
			if !want[k] {
				extra = append(extra, k)
			}
		}
		if len(missing) == 0 && len(extra) == 0 {
			return nil
		}
		slices.Sort(missing)
		slices.Sort(extra)
		var parts []string
		if len(missing) > 0 {
			parts = append(parts, "missing "+strings.Join(missing, ", "))
		}
		if len(extra) > 0 {
			parts = append(parts, "unexpected "+strings.Join(extra, ", "))
		}
		return errors.New(strings.Join(parts, "; "))
	}, nil
}

func canonSet(l []any, fold bool) map[string]bool {
	s := make(map[string]bool, len(l))
	for _, x := range l {
		s[pairbench.Canon(x, fold)] = true
	}
	return s
}

// show writes a value briefly for a reason, cut to 80 characters.
func show(v any) string {
	s := pairbench.Canon(v, false)
	if _, isString := v.(string); isString {
		s = fmt.Sprintf("%q", v)
	}
	if r := []rune(s); len(r) > 80 {
		s = string(r[:77]) + "..."
	}
	return s
}

func formatNumber(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }
