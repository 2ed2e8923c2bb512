package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/artifacts"
	"github.com/pairbench/pairbench/runner"
	"github.com/pairbench/pairbench/stats"
	"github.com/pairbench/pairbench/viewer"
)

// Report writes the run's report (report.json, report.md, report.html) into
// its directory and publishes it to the store, report.json last (an upload
// that fails is a problem, retried by a later upload); it returns the paths
// written. A shard holds part of a run: it has no report
// of its own (merge the shards to report the run).
func (r *Run) Report(ctx context.Context) ([]string, error) {
	if r.cfg.Shards > 0 {
		return nil, fmt.Errorf("run %s: shard %d/%d holds part of the run; merge the shards to report it", r.cfg.RunID, r.cfg.Shard, r.cfg.Shards)
	}
	paths, err := WriteReport(r.dir, r.dir, r.cfg.Link, r.problem)
	if err != nil {
		return paths, err
	}
	r.upload(ctx)
	return paths, nil
}

// WriteReport builds the report of the run in dir from its plan and every
// rows file (streamed, never held whole), and writes its three renderings into out (which may be dir),
// each replaced whole; report.md links to link. Before them it writes the
// rest of the report site (package viewer): a page per intent and, when dir
// holds trial directories, a page per pair. It returns the paths of the
// three renderings, in the order written. What the rows reader skips is told to
// problem.
func WriteReport(dir, out runner.RunDir, link string, problem func(runner.Problem)) ([]string, error) {
	plan, err := dir.ReadPlan()
	if err != nil {
		return nil, err
	}
	// The rows stream through the statistics, which keep a few numbers of
	// each: a run of any size is reported in little memory.
	b := stats.NewBuilder(plan.StatsPlan())
	site := viewer.NewSite(plan, dir)
	add := func(r *pairbench.Row) { b.Add(r); site.Add(r) }
	if err := dir.ScanRowsSkipping(plan.RunID, b.Unread()&site.Unread(), problem, add); err != nil {
		return nil, err
	}
	rep := b.Report()
	if _, err := site.Write(out, rep); err != nil {
		return nil, err
	}
	return out.WriteReport(rep, runner.ReportOptions{Link: link, HTML: viewer.HTMLOptions()})
}

// Merge gathers a run split across runners from store into out, which must
// be missing or empty (see runner.RunDir.Fetch), and returns its plan.
func Merge(ctx context.Context, store artifacts.Store, runID string, out runner.RunDir, trials bool, problem func(runner.Problem)) (*runner.Plan, error) {
	return out.Fetch(ctx, store, runID, trials, problem)
}

// Publish uploads the report in dir to store under runID, report.json last,
// and returns a link to report.html valid for ttl.
func Publish(ctx context.Context, store artifacts.Store, runID string, dir runner.RunDir, ttl time.Duration) (string, error) {
	if err := dir.PublishReport(ctx, store, runID); err != nil {
		return "", err
	}
	link, err := store.Presign(ctx, runner.StoreKey(runID, runner.ReportHTML), ttl)
	if err != nil {
		return "", fmt.Errorf("link to the report: %w", err)
	}
	return link, nil
}
