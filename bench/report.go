package bench

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"net/url"
	"os"
	"runtime/debug"
	"strings"
	"time"

	"github.com/pairbench/pairbench/rundir"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/agent"
	"github.com/pairbench/pairbench/artifacts"
	"github.com/pairbench/pairbench/report"
	"github.com/pairbench/pairbench/viewer"
)

// Report writes the run's report (report.json, report.md, report.html) into
// its directory and uploads the run to the store, the report last and only
// when it is final; it returns the paths written. A report of a run with
// pairs still to run (trials kept aborting) says so in its first line and
// is not published. An upload that fails is an *UploadError: the run is
// whole on disk, and the same command run again uploads it. A shard holds
// part of a run: it has no report of its own (merge the shards to report
// the run).
func (r *Run) Report(ctx context.Context) ([]string, error) {
	if r.cfg.Shards > 0 {
		return nil, fmt.Errorf("run %s: shard %d/%d holds part of the run; merge the shards to report it", r.cfg.RunID, r.cfg.Shard, r.cfg.Shards)
	}
	// A run's own report is uploaded with its site: a store cannot write
	// pages on demand.
	rep, err := writeReport(r.dir, r.dir, rundir.ReportOptions{Link: r.cfg.Link,
		Wrote: func(path string) { r.step(Step{Name: StepReportFile, File: path}) }}, siteAlways)
	r.problems(rep.Warnings)
	if err != nil {
		return rep.Paths, err
	}
	r.status = &rep.Status
	return rep.Paths, r.finalUpload(ctx)
}

// Reported is what WriteReport wrote, and the run's status it found.
type Reported struct {
	// Paths are the files written, in the order written.
	Paths  []string
	Status rundir.Status
	// Warnings are what the rows reader skipped or left out (partial
	// lines, rows not of the plan), in the order met.
	Warnings []rundir.Problem
	// SiteDeferred is set when the report site's pages were not written:
	// the run plans more than SiteUpFrontPairs pairs. `pairbench view`
	// writes them before it serves the run, and Publish before it uploads
	// it.
	SiteDeferred bool
}

// SiteUpFrontPairs is the most planned pairs of a run whose report site
// (a page per intent, and per pair with trial directories) WriteReport
// writes with the report. The pages take about 500 bytes and 2.6 µs of
// CPU a pair (a run of 1,000,000 rows: 258 MB, a sixth of the report's
// time), so 50,000 pairs write about 25 MB in an eighth of a second. A
// larger run's pages are written where they are served: by `pairbench
// view` (ReportForViewing) and before a store gets the run (Publish, and
// a run's own report), since a store serves files and renders nothing
// (docs/cli.md, "Report speed and memory").
const SiteUpFrontPairs = 50_000

// siteAlways has writeReport write the report site whatever the run's
// size.
const siteAlways = math.MaxInt

// WriteReport builds the report of the run in dir from its plan and every
// rows file (streamed, never held whole), and writes its three renderings
// into out (which may be dir), each replaced whole; report.md links to
// link. Before them it writes the rest of the report site (package viewer):
// a page per intent and, when dir holds trial directories, a page per pair.
// A run with pairs still to run (interrupted, a shard missing) gets a report
// that says so first (report.Report.Incomplete) and is not final. Resumes
// forced past a changed plan are named in it. Rows that are not trials of
// the plan (rundir.PlanRows) are left out and counted in the report's
// SkippedRows. A run of looks is reported at the look it stopped at
// (rundir.Plan.Stop, decided from the rows when run.json has none yet),
// counting only the pairs in force. It returns the paths of the
// three renderings, in the order written, and what the rows reader
// skipped (Reported.Warnings), with an error too. A run of more than
// SiteUpFrontPairs planned pairs gets no site (Reported.SiteDeferred): a
// site out already holds is removed, not left to show older rows.
func WriteReport(dir, out rundir.RunDir, link string) (Reported, error) {
	return writeReport(dir, out, rundir.ReportOptions{Link: link}, SiteUpFrontPairs)
}

// WriteReportAndSite is WriteReport that writes the report site whatever
// the run's size (`pairbench report --site`): for a run of more than
// SiteUpFrontPairs pairs whose report.html is read from disk, not through
// pairbench view or a store.
func WriteReportAndSite(dir, out rundir.RunDir, link string) (Reported, error) {
	return writeReport(dir, out, rundir.ReportOptions{Link: link}, siteAlways)
}

// writeReport is WriteReport that writes the report site when the run
// plans at most sitePairs pairs (siteAlways: whatever its size).
func writeReport(dir, out rundir.RunDir, o rundir.ReportOptions, sitePairs int) (Reported, error) {
	plan, err := dir.ReadPlan()
	if err != nil {
		return Reported{}, err
	}
	// A run of looks is reported at the look it stopped at: the one
	// run.json records, else (a sharded run's shards record none) the one
	// its rows decide, as merge does.
	if plan.Design() != nil && plan.Stop == nil {
		if plan.Stop, err = dir.DecideStop(plan); err != nil {
			return Reported{}, err
		}
	}
	forced, err := dir.ReadForced()
	if err != nil {
		return Reported{}, err
	}
	// The rows stream through the statistics, which keep a few numbers of
	// each, and the status count: a run of any size is reported in little
	// memory.
	b := report.NewBuilder(plan.StatsPlan())
	status := rundir.NewStatusCounter(plan)
	var site *viewer.Site
	skip := b.Unread()
	add := func(row *pairbench.Row) {
		b.Add(row)
		status.Add(row)
	}
	if plan.PlannedPairs() <= sitePairs {
		site = viewer.NewSite(plan, dir)
		site.OldTranscripts = agent.OldTranscripts(plan.AgentName())
		skip &= site.Unread()
		add = func(row *pairbench.Row) {
			b.Add(row)
			site.Add(row)
			status.Add(row)
		}
	}
	read, err := dir.ScanRows(rundir.RowQuery{Plan: plan, Skip: skip}, add)
	if err != nil {
		return Reported{Warnings: read.Warnings}, err
	}
	res := Reported{Status: status.Status(), Warnings: read.Warnings, SiteDeferred: site == nil}
	rep := b.Report()
	rep.SkippedRows += read.LeftOut
	if st := res.Status; !st.Finished() {
		rep.Incomplete = &report.Incomplete{Pending: st.Pending, Planned: st.Planned}
	}
	seen := map[string]bool{}
	for _, f := range forced {
		for _, c := range f.Changes {
			if !seen[c] {
				seen[c] = true
				rep.Forced = append(rep.Forced, c)
			}
		}
	}
	figures, err := report.NewIntentHTML(rep)
	if err != nil {
		return Reported{}, err
	}
	if site == nil {
		// Pages of older rows would pass for this report's.
		if err := os.RemoveAll(out.File(viewer.IntentsDir)); err != nil {
			return Reported{}, fmt.Errorf("remove the report site of an earlier report: %w", err)
		}
	} else if _, err := site.Write(out, rep, figures); err != nil {
		return Reported{}, err
	}
	o.HTML = viewer.HTMLOptions(figures)
	res.Paths, err = out.WriteReport(rep, o)
	return res, err
}

// ReportMemoryLimit is the Go memory a process that writes a report asks
// the collector to stay under (docs/cli.md, "Report speed and memory").
// 1,000,000 rows of 500,000 pairs keep about 115 MiB live at the most
// (the statistics' pairs, the status count, the plan; the site's pairs
// only where its pages are written); under a limit below that the
// collector would run without pause, at half the CPU (it did at 128 MiB
// when the site's pairs were kept too: a quarter of the report's CPU
// time). At 176 MiB it runs about twenty times and the process peaks at
// about 218 MiB, the CPU time as at 200 MiB (243 MiB peak); without a
// limit the heap grows to twice what is live.
const ReportMemoryLimit = 176 << 20

// HoldReportMemory sets the process's soft memory limit to
// ReportMemoryLimit, unless GOMEMLIMIT is set (the operator's choice wins),
// and returns what restores the limit before. A process whose live data
// passes the limit is collected more often, with at most half its CPU time
// (runtime/debug.SetMemoryLimit); GOMEMLIMIT=off lifts it. The limit is the
// whole process's: a command that does nothing but report calls it.
func HoldReportMemory() (restore func()) {
	if _, set := os.LookupEnv("GOMEMLIMIT"); set {
		return func() {}
	}
	before := debug.SetMemoryLimit(ReportMemoryLimit)
	return func() { debug.SetMemoryLimit(before) }
}

// ReportForViewing readies the run in dir to be viewed (viewer.Serve): dir
// must hold a plan; its report and report site are written into dir, as
// WriteReport does (the site whatever the run's size), when either is
// missing, or always with rewrite (a run just fetched from a store, whose
// stored report may lag its rows). It returns the report's warnings
// (Reported.Warnings), with an error too.
func ReportForViewing(dir rundir.RunDir, rewrite bool) ([]rundir.Problem, error) {
	if _, err := dir.ReadPlan(); err != nil {
		return nil, err
	}
	_, noReport := os.Stat(dir.File(rundir.ReportHTML))
	_, noSite := os.Stat(dir.File(viewer.IntentsDir))
	if noReport == nil && noSite == nil && !rewrite {
		return nil, nil
	}
	rep, err := writeReport(dir, dir, rundir.ReportOptions{}, siteAlways)
	return rep.Warnings, err
}

// FetchForViewing fetches run runID from store, its plan, rows and trial
// directories, into a new temporary directory and readies it to be viewed
// (ReportForViewing, rewritten: the stored report may lag its rows). The
// caller calls remove when done viewing; on an error nothing is left. The
// warnings are the fetch's and the report's (Merge, ReportForViewing), in
// that order, with an error too.
func FetchForViewing(ctx context.Context, store artifacts.Store, runID string) (_ rundir.RunDir, remove func(), warnings []rundir.Problem, _ error) {
	tmp, err := os.MkdirTemp("", "pairbench-view-")
	if err != nil {
		return rundir.RunDir{}, nil, nil, err
	}
	dir := rundir.RunDir{Path: tmp}
	remove = func() { os.RemoveAll(tmp) }
	_, warnings, err = Merge(ctx, store, runID, dir, true)
	if err != nil {
		remove()
		return rundir.RunDir{}, nil, warnings, err
	}
	more, err := ReportForViewing(dir, true)
	warnings = append(warnings, more...)
	if err != nil {
		remove()
		return rundir.RunDir{}, nil, warnings, err
	}
	return dir, remove, warnings, nil
}

// Merge gathers a run split across runners from store into out, which must
// be missing or empty (see rundir.RunDir.Fetch), and returns its plan. A
// sharded run of looks is decided here: its shards, which cannot see each
// other's rows, ran their share of every look, and the look the rows
// decide is recorded in out's run.json (rundir.Plan.Stop), so the report
// counts the pairs up to it alone. The warnings are the fetch's
// (rundir.RunDir.Fetch), with an error too.
func Merge(ctx context.Context, store artifacts.Store, runID string, out rundir.RunDir, trials bool) (*rundir.Plan, []rundir.Problem, error) {
	plan, warnings, err := out.Fetch(ctx, store, runID, trials)
	if err != nil || plan.Design() == nil || plan.Stop != nil {
		return plan, warnings, err
	}
	if plan.Stop, err = out.DecideStop(plan); err != nil || plan.Stop == nil {
		return plan, warnings, err
	}
	return plan, warnings, out.WritePlan(plan)
}

// Publish uploads the report in dir to store under runID, report.json last,
// and returns a link to report.html valid for ttl. A report whose site
// WriteReport deferred (a run of more than SiteUpFrontPairs pairs) is
// written again with its site first, from dir's plan and rows: a store
// serves files, so every page a reader may follow must be there.
func Publish(ctx context.Context, store artifacts.Store, runID string, dir rundir.RunDir, ttl time.Duration) (string, error) {
	if _, err := ReadVerdict(dir); err != nil {
		return "", err
	}
	if _, err := os.Stat(dir.File(viewer.IntentsDir)); errors.Is(err, fs.ErrNotExist) {
		if _, err := writeReport(dir, dir, rundir.ReportOptions{}, siteAlways); err != nil {
			return "", fmt.Errorf("write the report site to publish: %w", err)
		}
	}
	if err := dir.PublishReport(ctx, store, runID); err != nil {
		return "", err
	}
	link, err := store.Presign(ctx, rundir.StoreKey(runID, rundir.ReportHTML), ttl)
	if err != nil {
		return "", fmt.Errorf("link to the report: %w", err)
	}
	return link, nil
}

// SiteLink is the link to run runID's report site where a store's runs
// are served as a website at siteURL (its "<run id>/" folders, as stored):
// a link that works as long as the store keeps the run, where a presigned
// link dies within days and reaches report.html alone.
func SiteLink(siteURL, runID string) string {
	return strings.TrimSuffix(siteURL, "/") + "/" + url.PathEscape(runID) + "/" + rundir.ReportHTML
}

// ReadVerdict reads the report in dir (report.json) that is a verdict: that
// of a run with no pair left to run. The report of a run with pairs still to
// run is an *IncompleteError.
func ReadVerdict(dir rundir.RunDir) (*report.Report, error) {
	rep, err := dir.ReadReport()
	if err != nil {
		return nil, fmt.Errorf("%w (run `pairbench report %s` first)", err, dir.Path)
	}
	if in := rep.Incomplete; in != nil {
		return nil, &IncompleteError{RunID: rep.RunID, Pending: in.Pending, Planned: in.Planned}
	}
	return rep, nil
}

// IncompleteError is the error of publishing or posting the report of a run
// with pairs still to run: its labels are not the run's verdict.
type IncompleteError struct {
	RunID            string
	Pending, Planned int
}

func (e *IncompleteError) Error() string {
	return fmt.Sprintf("run %s is incomplete: %d of %d planned pairs have not run (a shard missing, or the run stopped before its end); its report is not a verdict and is not published",
		e.RunID, e.Pending, e.Planned)
}
