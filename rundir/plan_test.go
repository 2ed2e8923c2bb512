package rundir

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/report"
)

func testPlan() *Plan {
	return &Plan{
		V:         PlanVersion,
		RunID:     "r1",
		CreatedAt: time.Date(2026, 11, 29, 21, 0, 0, 0, time.UTC),
		Versions:  Versions{Pairbench: "devel", Agent: "1.6.0", Node: "22.19.0", Chromium: "156", PlaywrightMCP: "0.0.83"},
		Model:     Model{Provider: "scripted", ID: "pairbench-scripted", Scripted: true},
		Caps:      PlanCaps{TimeS: 300, Turns: 40, SpendUSD: 0.5},
		Allowlist: []string{"mcp__browser__browser_click", "mcp__pairbench__webmcp"},
		Seed:      42,
		Alpha:     0.05,
		Intents: []PlannedIntent{
			{
				ID: "books-cheapest", Domain: "books.example", Class: pairbench.AnswerAgreement,
				Agreement: &report.Agreement{Kind: pairbench.AgreeCheapest, Field: "price", Tolerance: 1},
				Tools:     []string{"find_books"},
				Fixtures:  map[string]any{"day": "2026-12-01"},
				Pairs:     []PlannedPair{{Pair: 0, Order: pairbench.AB}, {Pair: 1, Order: pairbench.BA}},
			},
			{
				ID: "weather-placebo", Domain: "weather.example", Class: pairbench.AnswerShapeOnly, Placebo: true,
				Pairs: []PlannedPair{{Pair: 0, Order: pairbench.BA}},
			},
		},
	}
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
	return path
}

func TestReadPlanRoundTrip(t *testing.T) {
	want := testPlan()
	b, err := json.MarshalIndent(want, "", "  ")
	require.NoError(t, err)

	got, err := ReadPlan(writeFile(t, "run.json", string(b)))
	require.NoError(t, err)
	assert.Equal(t, want, got)
}

func TestReadPlanMissing(t *testing.T) {
	_, err := ReadPlan(filepath.Join(t.TempDir(), "run.json"))
	require.Error(t, err)
	assert.ErrorIs(t, err, fs.ErrNotExist)
}

func TestReadPlanBadJSONNamesLine(t *testing.T) {
	tests := []struct {
		name, content, want string
	}{
		{"syntax", "{\n  \"v\": 1,\n  \"run_id\": \"r\" \"x\"\n}", "run.json:3:"},
		{"type", "{\n  \"v\": 1,\n  \"alpha\": \"high\"\n}", "run.json:3:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ReadPlan(writeFile(t, "run.json", tt.content))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

func TestReadPlanNamesEveryProblem(t *testing.T) {
	p := testPlan()
	p.V = 7
	p.RunID = ""
	p.Alpha = 0
	p.Intents[0].Class = "vibes"
	p.Intents[0].Pairs = append(p.Intents[0].Pairs, PlannedPair{Pair: 1, Order: pairbench.AB}, PlannedPair{Pair: 2, Order: "CA"})
	p.Intents[1].ID = "books-cheapest"
	b, err := json.Marshal(p)
	require.NoError(t, err)

	_, err = ReadPlan(writeFile(t, "run.json", string(b)))
	require.Error(t, err)
	for _, want := range []string{
		"unsupported plan version 7",
		"missing run_id",
		"alpha 0 is not between 0 and 1",
		`intent "books-cheapest": unknown answer class "vibes"`,
		`intent "books-cheapest": pair 1 listed twice`,
		`intent "books-cheapest": pair 2: order "CA" is not AB or BA`,
		`intent "books-cheapest": listed twice`,
	} {
		assert.Contains(t, err.Error(), want)
	}
}

func TestStatsPlan(t *testing.T) {
	got := testPlan().StatsPlan()
	assert.Equal(t, report.Plan{
		RunID: "r1",
		Model: report.Model{Name: "scripted/pairbench-scripted", Scripted: true},
		Alpha: 0.05,
		Seed:  42,
		Intents: []report.PlanIntent{
			{
				ID: "books-cheapest", Domain: "books.example", Class: pairbench.AnswerAgreement,
				Agreement: &report.Agreement{Kind: pairbench.AgreeCheapest, Field: "price", Tolerance: 1},
				Tools:     []string{"find_books"}, Pairs: 2,
			},
			{ID: "weather-placebo", Domain: "weather.example", Class: pairbench.AnswerShapeOnly, Placebo: true, Pairs: 1},
		},
	}, got)
}
