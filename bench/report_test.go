package bench_test

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/runner"
	"github.com/pairbench/pairbench/stats"
)

// TestReportSkipsOnlyUnreadFields: the report reads the rows skipping what
// stats.Builder.Unread names; built from whole rows instead, every number is
// the same. The example run has agreement checks (whose answers must be
// read) and, with them taken out of the plan, none (the answers skipped).
func TestReportSkipsOnlyUnreadFields(t *testing.T) {
	dir := runner.RunDir{Path: "../examples/runs/demo"}
	plan, err := dir.ReadPlan()
	require.NoError(t, err)
	noAgreement := *plan
	noAgreement.Intents = nil
	for _, in := range plan.Intents {
		in.Agreement = nil
		noAgreement.Intents = append(noAgreement.Intents, in)
	}
	for name, p := range map[string]*runner.Plan{"agreement checks": plan, "no agreement check": &noAgreement} {
		report := func(skip func(*stats.Builder) pairbench.RowFields) []byte {
			b := stats.NewBuilder(p.StatsPlan())
			require.NoError(t, dir.ScanRowsSkipping(p.RunID, skip(b), nil, b.Add))
			var out bytes.Buffer
			require.NoError(t, stats.WriteJSON(&out, b.Report()))
			return out.Bytes()
		}
		whole := report(func(*stats.Builder) pairbench.RowFields { return 0 })
		skipped := report((*stats.Builder).Unread)
		require.Equal(t, string(whole), string(skipped), "%s: the report read other fields than Unread says", name)
	}
	b := stats.NewBuilder(noAgreement.StatsPlan())
	require.NotZero(t, b.Unread()&pairbench.FieldExtracted, "without agreement checks the answers are skipped")
	b = stats.NewBuilder(plan.StatsPlan())
	require.Zero(t, b.Unread()&pairbench.FieldExtracted, "agreement checks read the answers")
}
