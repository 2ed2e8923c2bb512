package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/rundir"
)

// TestCommittedDemoIsCurrent regenerates the demo run and compares it with
// the committed examples/runs/demo, so the two cannot drift apart.
func TestCommittedDemoIsCurrent(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, write(dir))
	for _, name := range []string{"run.json", "rows.jsonl"} {
		got, err := os.ReadFile(filepath.Join(dir, name))
		require.NoError(t, err)
		want, err := os.ReadFile(filepath.Join("..", "demo", name))
		require.NoError(t, err)
		assert.Equal(t, string(want), string(got),
			"examples/runs/demo/%s is stale; run: go run ./examples/runs/gen -out examples/runs/demo && go run ./cmd/pairbench report examples/runs/demo", name)
	}
}

// TestDemoRowsAreValid reads the demo back the way pairbench report does.
func TestDemoRowsAreValid(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, write(dir))

	run := rundir.RunDir{Path: dir}
	plan, err := run.ReadPlan()
	require.NoError(t, err)
	var rows []pairbench.Row
	read, err := run.ScanRows(rundir.RowQuery{RunID: plan.RunID}, func(r *pairbench.Row) { rows = append(rows, *r) })
	require.NoError(t, err)
	assert.Empty(t, read.Warnings, "demo rows")

	planned := make(map[pairbench.Key]pairbench.Order)
	for _, in := range plan.Intents {
		for _, p := range in.Pairs {
			planned[pairbench.Key{Intent: in.ID, Pair: p.Pair}] = p.Order
		}
	}
	outcomes := make(map[pairbench.Outcome]int)
	for _, r := range rows {
		outcomes[r.Outcome]++
		assert.Equal(t, plan.RunID, r.RunID)
		if r.Stage == pairbench.StagePair {
			order, ok := planned[r.Key()]
			require.True(t, ok, "row of an unplanned pair %v", r.Key())
			assert.Equal(t, order, r.Order, "row order matches the plan for %v", r.Key())
		}
	}
	for _, o := range pairbench.Outcomes {
		assert.Positive(t, outcomes[o], "the demo has no %s trial", o)
	}
}
