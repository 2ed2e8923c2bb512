// Package rundir is a run's format and its pure state: the run directory
// (RunDir) and its lock, the row log, the frozen plan (Plan, run.json), jobs
// and shards, which rows are trials of the plan (PlanRows), the tally of
// pairs (Tally), the run's status, a trial directory's files and timeline,
// and the store side (Syncer, Reconcile, Fetch, leases, the published
// report).
//
// It holds no part of the engine: reading a finished or running run needs
// no browser, agent, sandbox or JavaScript interpreter, so the report, the
// bot and the viewer read runs through this package alone. Package runner
// runs the trials that fill it.
package rundir
