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
	const start, end = "<!-- coverage table: go run ./stats/tables coverage -->\n", "<!-- end coverage table -->"
	s := string(doc)
	i, j := strings.Index(s, start), strings.Index(s, end)
	require.True(t, i >= 0 && j > i, "docs/statistics.md has no coverage table markers")
	require.Equal(t, b.String(), s[i+len(start):j], "docs/statistics.md's coverage table is stale: run go run ./stats/tables coverage")
}
