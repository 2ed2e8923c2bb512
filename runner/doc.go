// Package runner is the engine of a run: the plan made from a registry
// (NewPlan), the schedule (RunQueue), an Execution of a plan's pending jobs
// over its slots, and a trial (Trials.Run: the browser set up, the arm's
// tools registered, the agent run in its sandbox, the answer graded, the
// row appended), with the smoke checks and budgets that gate a run.
//
// It declares the parts it drives, Browsers and Agent; the adapters in
// browser/... and agent/... implement them. What a run writes
// and how it is read back (the run directory, plan, rows, tally, status and
// the store side) is package rundir's.
package runner
