package intents

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func days(n int) *int { return &n }

func fixtureIntent() Intent {
	return Intent{
		ID:       "flight",
		Prompt:   "Find a flight from {{from}} on {{date}} for {{ seats }} people.",
		StartURL: "https://air.example/search?from={{from}}",
		Fixtures: map[string]Fixture{
			"from":  {Value: "OSL"},
			"date":  {DaysFromStart: days(14)},
			"seats": {Value: 2.0},
		},
		Answer: map[string]any{"type": "object"},
		Rules: []Rule{
			{Kind: "date_after", Field: "depart", Value: "{{date}}"},
			{Kind: "one_of", Field: "from", Values: []any{"{{from}}", "Gardermoen"}},
		},
		Baseline: Baseline{
			ToolArgs: map[string]any{"from": "{{from}}", "date": "{{date}}", "seats": "{{seats}}", "note": "{{seats}} seats"},
			Steps:    []Step{{Tool: "browser_type", Args: map[string]any{"element": "From", "text": "{{from}}"}}},
			Answer:   map[string]any{"depart": "{{date}}", "legs": []any{map[string]any{"from": "{{from}}"}}},
		},
	}
}

func TestResolve(t *testing.T) {
	in := fixtureIntent()
	start := time.Date(2026, 11, 29, 23, 30, 0, 0, time.UTC)
	out, err := Resolve(in, start)
	require.NoError(t, err)
	assert.Equal(t, "Find a flight from OSL on 2026-12-13 for 2 people.", out.Prompt)
	assert.Equal(t, "https://air.example/search?from=OSL", out.StartURL)
	assert.Equal(t, "2026-12-13", out.Rules[0].Value)
	assert.Equal(t, []any{"OSL", "Gardermoen"}, out.Rules[1].Values)
	assert.Equal(t, map[string]any{"from": "OSL", "date": "2026-12-13", "seats": 2.0, "note": "2 seats"}, out.Baseline.ToolArgs,
		"a string that is one placeholder takes the fixture's type")
	assert.Equal(t, "OSL", out.Baseline.Steps[0].Args["text"])
	assert.Equal(t, map[string]any{"depart": "2026-12-13", "legs": []any{map[string]any{"from": "OSL"}}}, out.Baseline.Answer)

	// The input is untouched.
	assert.Equal(t, "{{date}}", in.Rules[0].Value)
	assert.Equal(t, "{{from}}", in.Baseline.ToolArgs["from"])
	assert.Equal(t, "{{from}}", in.Baseline.Steps[0].Args["text"])
	assert.Equal(t, "{{from}}", in.Baseline.Answer["legs"].([]any)[0].(map[string]any)["from"])

	// Resolving twice changes nothing more.
	again, err := Resolve(out, start.AddDate(1, 0, 0))
	require.NoError(t, err)
	assert.Equal(t, out.Prompt, again.Prompt)
}

func TestResolveDateUsesStartLocation(t *testing.T) {
	in := Intent{ID: "x", Prompt: "{{d}}", Fixtures: map[string]Fixture{"d": {DaysFromStart: days(0)}}}
	tokyo := time.FixedZone("JST", 9*3600)
	out, err := Resolve(in, time.Date(2026, 11, 29, 20, 0, 0, 0, time.UTC).In(tokyo))
	require.NoError(t, err)
	assert.Equal(t, "2026-11-30", out.Prompt)
}

func TestResolveUndefined(t *testing.T) {
	in := Intent{ID: "x", Prompt: "Go to {{nowhere}}"}
	_, err := Resolve(in, time.Now())
	var ue *UndefinedFixtureError
	require.ErrorAs(t, err, &ue)
	assert.Equal(t, "nowhere", ue.Name)
	assert.Equal(t, "intent x: {{nowhere}} names no fixture", err.Error())
}

func TestStale(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		name     string
		fixtures map[string]Fixture
		stale    bool
		reason   string
	}{
		{"no fixtures", nil, false, ""},
		{"relative date", map[string]Fixture{"d": {DaysFromStart: days(0)}}, false, ""},
		{"today", map[string]Fixture{"d": {Value: "2026-11-29"}}, false, ""},
		{"future", map[string]Fixture{"d": {Value: "2027-01-01"}}, false, ""},
		{"not a date", map[string]Fixture{"d": {Value: "2026-13-45"}, "n": {Value: 20261128.0}}, false, ""},
		{"past", map[string]Fixture{"show": {Value: "2026-11-28"}, "city": {Value: "Oslo"}}, true,
			"fixture show is 2026-11-28, before today (2026-11-29); move it forward or use days_from_start"},
	}
	for _, tc := range cases {
		reason, stale := Stale(Intent{Fixtures: tc.fixtures}, now)
		assert.Equal(t, tc.stale, stale, tc.name)
		assert.Equal(t, tc.reason, reason, tc.name)
	}
}
