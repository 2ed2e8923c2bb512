package stats

import "github.com/pairbench/pairbench"

// Build computes the verdict on a run from its plan and rows.
func Build(plan Plan, rows []pairbench.Row) *Report {
	return &Report{V: ReportVersion, RunID: plan.RunID, Model: plan.Model}
}
