package viewer

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/pairbench/pairbench/rundir"
)

// TestShowSteps: a call's arguments and a JSON result are shown indented,
// a command line and other text as they are, every text trimmed.
func TestShowSteps(t *testing.T) {
	got := showSteps([]rundir.Step{
		{Kind: rundir.CallStep, Turn: 1, AtMS: 5, Tool: "mcp__pairbench__webmcp", Args: []byte(`{"action":"list"}`)},
		{Kind: rundir.CallStep, Turn: 2, Tool: "mcp__browser__browser_snapshot"},
		{Kind: rundir.CallStep, Turn: 3, Tool: "shell", Text: "ls /"},
		{Kind: rundir.ResultStep, Tool: "mcp__pairbench__webmcp", Text: ` {"tools":[]}`, Error: true},
		{Kind: rundir.ResultStep, Tool: "shell", Text: "{not json"},
		{Kind: rundir.TextStep, Turn: 3, Text: strings.Repeat("ø", maxStepText+3)},
	})
	want := []step{
		{Kind: rundir.CallStep, Turn: 1, AtMS: 5, Tool: "mcp__pairbench__webmcp", Text: "{\n  \"action\": \"list\"\n}"},
		{Kind: rundir.CallStep, Turn: 2, Tool: "mcp__browser__browser_snapshot", Text: "{}"},
		{Kind: rundir.CallStep, Turn: 3, Tool: "shell", Text: "ls /"},
		{Kind: rundir.ResultStep, Tool: "mcp__pairbench__webmcp", Text: "{\n  \"tools\": []\n}", Error: true},
		{Kind: rundir.ResultStep, Tool: "shell", Text: "{not json"},
		{Kind: rundir.TextStep, Turn: 3, Text: strings.Repeat("ø", maxStepText), Trimmed: 3},
	}
	assert.Equal(t, want, got)
}

func TestTrimKeepsRunes(t *testing.T) {
	s, n := trim(strings.Repeat("ø", 10), 4)
	assert.Equal(t, "øøøø", s)
	assert.Equal(t, 6, n)
	s, n = trim("short", 10)
	assert.Equal(t, "short", s)
	assert.Zero(t, n)
}

func TestSlugStaysInside(t *testing.T) {
	assert.Equal(t, "books-cheapest", slug("books-cheapest"))
	for _, id := range []string{"../../etc", "a/b", "", ".hidden", "x-abc", `<img src=x>`} {
		s := slug(id)
		assert.Regexp(t, `^x-[0-9a-f]{16}$`, s, id)
	}
	assert.NotEqual(t, slug("a/b"), slug("a/c"))
}
