package intents

import (
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/pairbench/pairbench/intents/config"
)

// placeholder matches a well-formed {{name}} (spaces inside allowed);
// anyPlaceholder anything between "{{" and "}}".
var (
	placeholder    = regexp.MustCompile(`\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}`)
	anyPlaceholder = regexp.MustCompile(`\{\{([^{}]*)\}\}`)
	fixtureName    = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// UndefinedFixtureError is returned by Resolve when a placeholder names no
// fixture.
type UndefinedFixtureError struct {
	Intent, Name string
}

func (e *UndefinedFixtureError) Error() string {
	return fmt.Sprintf("intent %s: {{%s}} names no fixture", e.Intent, e.Name)
}

// FixtureValues resolves in's fixtures for a run that starts at start: a
// literal as itself, {days_from_start: n} as the date n days after start in
// start's location, formatted YYYY-MM-DD.
func FixtureValues(in Intent, start time.Time) map[string]any {
	out := make(map[string]any, len(in.Fixtures))
	for name, f := range in.Fixtures {
		if f.DaysFromStart != nil {
			out[name] = start.AddDate(0, 0, *f.DaysFromStart).Format(time.DateOnly)
		} else {
			out[name] = f.Value
		}
	}
	return out
}

// Resolve returns a copy of in with every {{name}} placeholder in the prompt,
// start URL, rule arguments and baseline (tool arguments, step arguments and
// answer) replaced by the fixture's value (see FixtureValues). A string that
// is exactly one placeholder takes the fixture's value with its type (a
// number stays a number); elsewhere the value is written into the string.
// The result has the same fixtures, so resolving twice is harmless. It
// returns an *UndefinedFixtureError for a placeholder with no fixture. in is
// not modified.
func Resolve(in Intent, start time.Time) (Intent, error) {
	vals := FixtureValues(in, start)
	r := resolver{vals: vals, intent: in.ID}
	out := in
	out.Prompt = r.str(in.Prompt)
	out.StartURL = r.str(in.StartURL)
	out.Answer = deepCopy(in.Answer).(map[string]any)
	out.Fixtures = maps.Clone(in.Fixtures)
	if in.Agreement != nil {
		a := *in.Agreement
		out.Agreement = &a
	}
	out.Rules = make([]Rule, len(in.Rules))
	for i, rule := range in.Rules {
		rule.Value = r.value(rule.Value)
		if rule.Values != nil {
			rule.Values = r.value(rule.Values).([]any)
		}
		out.Rules[i] = rule
	}
	if in.Rules == nil {
		out.Rules = nil
	}
	out.Baseline.ToolArgs, _ = r.value(in.Baseline.ToolArgs).(map[string]any)
	out.Baseline.Answer, _ = r.value(in.Baseline.Answer).(map[string]any)
	out.Baseline.Steps = nil
	for _, s := range in.Baseline.Steps {
		s.Args, _ = r.value(s.Args).(map[string]any)
		out.Baseline.Steps = append(out.Baseline.Steps, s)
	}
	out.Checks = r.checks(in.Checks)
	if r.err != nil {
		return Intent{}, r.err
	}
	return out, nil
}

type resolver struct {
	vals   map[string]any
	intent string
	err    error
}

// str substitutes placeholders inside a string.
func (r *resolver) str(s string) string {
	return placeholder.ReplaceAllStringFunc(s, func(m string) string {
		name := placeholder.FindStringSubmatch(m)[1]
		v, ok := r.vals[name]
		if !ok {
			if r.err == nil {
				r.err = &UndefinedFixtureError{Intent: r.intent, Name: name}
			}
			return m
		}
		return scalarString(v)
	})
}

// value substitutes placeholders in a JSON-like value, copying it.
func (r *resolver) value(v any) any {
	switch v := v.(type) {
	case string:
		if m := placeholder.FindStringSubmatchIndex(v); m != nil && m[0] == 0 && m[1] == len(v) {
			name := v[m[2]:m[3]]
			if val, ok := r.vals[name]; ok {
				return deepCopy(val)
			}
		}
		return r.str(v)
	case map[string]any:
		if v == nil {
			return v
		}
		out := make(map[string]any, len(v))
		for k, x := range v {
			out[k] = r.value(x)
		}
		return out
	case []any:
		if v == nil {
			return v
		}
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = r.value(x)
		}
		return out
	default:
		return v
	}
}

// scalarString writes a fixture value into a string.
func scalarString(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case float64:
		return numberString(v)
	case nil:
		return ""
	default:
		return fmt.Sprint(v)
	}
}

func deepCopy(v any) any {
	switch v := v.(type) {
	case map[string]any:
		if v == nil {
			return v
		}
		out := make(map[string]any, len(v))
		for k, x := range v {
			out[k] = deepCopy(x)
		}
		return out
	case []any:
		if v == nil {
			return v
		}
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = deepCopy(x)
		}
		return out
	default:
		return v
	}
}

// Stale reports whether in has a fixed-date fixture (a literal YYYY-MM-DD
// string) before now's date, in now's location, and says which. A stale
// intent is skipped by a run unless named explicitly, since the page no
// longer offers that date.
func Stale(in Intent, now time.Time) (reason string, stale bool) {
	today := now.Format(time.DateOnly)
	for _, name := range slices.Sorted(maps.Keys(in.Fixtures)) {
		f := in.Fixtures[name]
		s, ok := f.Value.(string)
		if f.DaysFromStart != nil || !ok {
			continue
		}
		if _, err := time.Parse(time.DateOnly, s); err != nil {
			continue
		}
		if s < today {
			return fmt.Sprintf("fixture %s is %s, before today (%s); move it forward or use days_from_start", name, s, today), true
		}
	}
	return "", false
}

// placeholders returns the names in s's {{name}} placeholders and the text
// of any malformed one.
func placeholders(s string) (names, bad []string) {
	for _, m := range anyPlaceholder.FindAllStringSubmatch(s, -1) {
		if inner := strings.TrimSpace(m[1]); fixtureName.MatchString(inner) {
			names = append(names, inner)
		} else {
			bad = append(bad, m[0])
		}
	}
	return names, bad
}

// eachString walks a JSON-like value and calls fn with each string in it,
// in a fixed order (map keys sorted).
func eachString(v any, fn func(string)) {
	switch v := v.(type) {
	case string:
		fn(v)
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(v)) {
			eachString(v[k], fn)
		}
	case []any:
		for _, x := range v {
			eachString(x, fn)
		}
	}
}

// fixtureType is decoded by decodeFixture.
var fixtureType = reflect.TypeFor[Fixture]()

// decodeFixture reads a fixture: a literal, {value: literal} or
// {days_from_start: n}.
func decodeFixture(d *config.Decoder, n *yaml.Node, v reflect.Value, path string) {
	var f Fixture
	if n.Kind != yaml.MappingNode {
		f.Value, _ = d.Plain(n, path, 0)
		if f.Value == nil {
			d.Problem(n.Line, "%s: fixture has no value", path)
		}
		v.Set(reflect.ValueOf(f))
		return
	}
	keys := 0
	d.EachKey(n, path, func(key string, k, val *yaml.Node) {
		keys++
		switch key {
		case "value":
			f.Value, _ = d.Plain(val, path+".value", 0)
		case "days_from_start":
			var days int
			if err := config.ResolveAlias(val).Decode(&days); err != nil || val.Kind != yaml.ScalarNode {
				d.Problem(k.Line, "%s.days_from_start: want a whole number of days", path)
				return
			}
			if days < 0 {
				d.Problem(k.Line, "%s.days_from_start: want 0 or more days, got %d", path, days)
			}
			f.DaysFromStart = &days
		default:
			d.Problem(k.Line, "%s: unknown fixture field %q (want value or days_from_start)", path, key)
		}
	})
	if keys != 1 || (f.Value == nil && f.DaysFromStart == nil) {
		d.Problem(n.Line, "%s: a fixture is a literal, {value: ...} or {days_from_start: n}", path)
	}
	v.Set(reflect.ValueOf(f))
}

// numberString formats a number the way JSON would.
func numberString(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }
