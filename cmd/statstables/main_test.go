package main

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDocsCoverageTableIsCurrent recomputes the coverage table and checks
// docs/statistics.md publishes exactly it.
func TestDocsCoverageTableIsCurrent(t *testing.T) {
	var b bytes.Buffer
	coverage(&b)
	doc, err := os.ReadFile("../../docs/statistics.md")
	require.NoError(t, err)
	const start, end = "<!-- coverage table: go run ./cmd/statstables coverage -->\n", "<!-- end coverage table -->"
	s := string(doc)
	i, j := strings.Index(s, start), strings.Index(s, end)
	require.True(t, i >= 0 && j > i, "docs/statistics.md has no coverage table markers")
	require.Equal(t, b.String(), s[i+len(start):j], "docs/statistics.md's coverage table is stale: run go run ./cmd/statstables coverage")
}

// TestDocsPowerTableIsCurrent checks the exact (accuracy) half of the power
// table against docs/statistics.md; the simulated half is seeded and
// reproduced by go run ./cmd/statstables power.
func TestDocsPowerTableIsCurrent(t *testing.T) {
	doc, err := os.ReadFile("../../docs/statistics.md")
	require.NoError(t, err)
	s := string(doc)
	i := strings.Index(s, "<!-- power table: go run ./cmd/statstables power -->")
	require.GreaterOrEqual(t, i, 0, "docs/statistics.md has no power table")
	for _, line := range accuracyPowerRows() {
		require.Contains(t, s[i:], line, "docs/statistics.md's accuracy power table is stale: run go run ./cmd/statstables power")
	}
}
