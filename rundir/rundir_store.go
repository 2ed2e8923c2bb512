package rundir

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sync/errgroup"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/artifacts"
	"github.com/pairbench/pairbench/report"
)

// A run is stored under "<run id>/" in an artifact store, with the layout it
// has on disk.

// StoreKey returns the store key of the run-relative file rel of run runID.
func StoreKey(runID, rel string) string { return runID + "/" + rel }

// fetchConcurrency bounds the downloads one Fetch runs at once.
const fetchConcurrency = 4

// Syncer returns a Syncer that mirrors the run directory into store under
// runID as the run produces it, for the runner of shard k (0: a run not
// split). The report files go last (PublishLast), and only once the report
// is final (no pair left to run), so report.json in a store always means a
// whole run. The runner's rows and spend files are guarded: a stored copy
// another writer changed is never overwritten (artifacts.ErrChanged).
func (d RunDir) Syncer(store artifacts.Store, runID string, k int) (*artifacts.Syncer, error) {
	s, err := artifacts.NewSyncer(store, d.Path, runID, PublishLast...)
	if err != nil {
		return nil, err
	}
	s.Guard(RowsFileOf(k), SpendFileOf(k))
	// Rows in a store without their plan cannot be resumed (checkLayout).
	s.UploadFirst(PlanFile)
	s.HoldLastUntil(func() (bool, error) {
		rep, err := d.ReadReport()
		if errors.Is(err, fs.ErrNotExist) {
			return false, nil
		} else if err != nil {
			return false, err
		}
		return rep.Final() && rep.RunID == runID, nil
	})
	return s, nil
}

// Reconcile makes the run directory and run runID's copy in store one run
// before a runner, shard k of n (0 of 0 for a run not split), works on it.
// The caller holds the directory's lock.
//
//   - A plan only the store holds is fetched, and fetched is true: the run
//     was planned by another runner (a --plan-only job, or an earlier
//     runner on another machine).
//   - Two different plans under one run id are refused: they are two runs.
//     One plan with the look the run stopped at recorded (Plan.Stop) and
//     one without it yet is one run: the directory keeps the stopped one.
//   - Rows of this runner's rows file that the store holds and the
//     directory lacks are appended to the directory's (a re-run CI job on
//     a fresh machine resumes from them), so the next upload replaces the
//     stored file with one holding every row it held; a row stored
//     differently from the directory's is refused. ForcedFile likewise.
//     The trial directories of the rows taken are fetched too, so the
//     run's report shows their pairs' transcripts and screenshots.
//   - The layout of both is checked as CheckLayout does.
//
// What it took from the store is returned as warnings.
func (d RunDir) Reconcile(ctx context.Context, store artifacts.Store, runID string, k, n int) (fetched bool, warnings []Problem, err error) {
	prefix := runID + "/"
	listed, err := store.List(ctx, prefix)
	if err != nil {
		return false, nil, fmt.Errorf("read run %s in the store %v: %w", runID, store, err)
	}
	stored := map[string]bool{}
	var storedRows, trialFiles []string
	for _, info := range listed {
		rel := strings.TrimPrefix(info.Key, prefix)
		stored[rel] = true
		if IsTrialFile(rel) {
			trialFiles = append(trialFiles, rel)
		}
		if _, ok := ShardOf(rel); ok {
			storedRows = append(storedRows, rel)
		}
	}
	where := fmt.Sprintf("the store %v", store)
	if err := checkLayout(where+" (run "+runID+")", stored[PlanFile], storedRows, k, n); err != nil {
		return false, nil, err
	}

	if fetched, err = d.takeStoredPlan(ctx, store, runID, where, stored[PlanFile]); err != nil {
		return false, nil, err
	}
	if err := d.CheckLayout(k, n); err != nil {
		return fetched, warnings, err
	}

	rel := RowsFileOf(k)
	if stored[rel] {
		taken, took, err := d.takeStoredRows(ctx, store, runID, rel, k)
		warnings = append(warnings, took...)
		if err != nil {
			return fetched, warnings, err
		}
		if err := d.takeStoredTrials(ctx, store, runID, taken, trialFiles); err != nil {
			return fetched, warnings, err
		}
	}
	for _, rel := range []string{ForcedFile, SpendFileOf(k)} {
		if stored[rel] {
			if err := d.takeStoredLines(ctx, store, runID, rel); err != nil {
				return fetched, warnings, err
			}
		}
	}
	return fetched, warnings, nil
}

// ReconcilePlan is Reconcile for a runner that runs no trials, a
// --plan-only job: it makes the directory's plan and the store's one, as
// Reconcile does (fetched is true when it took the store's), and takes no
// rows, so a run split across runners is planned (or topped up) as one
// that is not.
func (d RunDir) ReconcilePlan(ctx context.Context, store artifacts.Store, runID string) (fetched bool, err error) {
	has, err := artifacts.Exists(ctx, store, StoreKey(runID, PlanFile))
	if err != nil {
		return false, fmt.Errorf("read run %s in the store %v: %w", runID, store, err)
	}
	return d.takeStoredPlan(ctx, store, runID, fmt.Sprintf("the store %v", store), has)
}

// takeStoredPlan makes the directory's run.json and the one stored (has
// says whether the store holds one) one plan: the stored one is fetched
// when the directory has none (fetched), two plans are refused, and one
// with the run's stop recorded is kept over one without.
func (d RunDir) takeStoredPlan(ctx context.Context, store artifacts.Store, runID, where string, has bool) (fetched bool, err error) {
	if !has {
		return false, nil
	}
	local, err := os.ReadFile(d.File(PlanFile))
	hasLocal := err == nil
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, fmt.Errorf("read %s: %w", d.File(PlanFile), err)
	}
	remote, err := getObject(ctx, store, StoreKey(runID, PlanFile))
	if err != nil {
		return false, err
	}
	switch {
	case !hasLocal:
		if err := d.WriteFile(PlanFile, remote); err != nil {
			return false, err
		}
		return true, nil
	case !bytes.Equal(local, remote):
		if stopped, ok := oneRunStopped(local, remote); ok {
			if stopped != nil {
				return false, d.WriteFile(PlanFile, stopped)
			}
			return false, nil
		}
		return false, fmt.Errorf("run %s: %s in %s and %s are two different plans under one run id; use another --run-id for one of them",
			runID, PlanFile, where, d.Path)
	}
	return false, nil
}

// takeStoredRows appends to the rows file rel (of shard k) the stored rows
// it lacks, refusing a row recorded differently in the two, and returns
// the rows it appended.
func (d RunDir) takeStoredRows(ctx context.Context, store artifacts.Store, runID, rel string, k int) (_ []pairbench.Row, warnings []Problem, _ error) {
	data, err := getObject(ctx, store, StoreKey(runID, rel))
	if err != nil {
		return nil, warnings, err
	}
	remote, warnings, err := readRows(bytes.NewReader(data), StoreKey(runID, rel))
	if err != nil {
		return nil, warnings, err
	}
	var local []pairbench.Row
	read, err := d.ScanRows(RowQuery{File: rel}, func(r *pairbench.Row) { local = append(local, *r) })
	warnings = append(warnings, read.Warnings...)
	if err != nil {
		return nil, warnings, err
	}
	have := map[rowID][]byte{}
	for _, r := range local {
		b, _ := pairbench.AppendRow(nil, r)
		have[idOf(r)] = b
	}
	var missing []pairbench.Row
	for _, r := range remote {
		b, err := pairbench.AppendRow(nil, r)
		if err != nil {
			return nil, warnings, fmt.Errorf("%s: %w", StoreKey(runID, rel), err)
		}
		mine, ok := have[idOf(r)]
		switch {
		case !ok:
			missing = append(missing, r)
			have[idOf(r)] = b
		case !bytes.Equal(mine, b):
			return nil, warnings, fmt.Errorf("run %s: %s pair %d %s attempt %d is recorded differently in %s and in the store: two runners ran it. Nothing was changed: the store's copy is kept as it is, and this directory's rows are not uploaded over it. To keep the store's copy, move %s aside and run again (the run resumes from the store); to keep this directory's, report it where it is (pairbench report %[6]s) or run it again with a new --run-id",
				runID, r.Intent, r.Pair, r.Arm, r.Attempt, d.File(rel), d.Path)
		}
	}
	if len(missing) == 0 {
		return nil, warnings, nil
	}
	rl, err := d.OpenRowLog(k)
	if err != nil {
		return nil, warnings, err
	}
	defer rl.Close()
	for _, r := range missing {
		if err := rl.Append(r); err != nil {
			return nil, warnings, err
		}
	}
	warnings = append(warnings, Problem{File: d.File(rel), Msg: fmt.Sprintf("took %d rows from the store that this directory lacked", len(missing))})
	return missing, warnings, nil
}

// takeStoredTrials fetches, of the stored trial files (run-relative), those
// in the trial directories of rows that the directory lacks.
func (d RunDir) takeStoredTrials(ctx context.Context, store artifacts.Store, runID string, rows []pairbench.Row, stored []string) error {
	dirs := map[string]bool{}
	for _, r := range rows {
		if r.TrialDir != "" {
			dirs[path.Clean(r.TrialDir)] = true
		}
	}
	var want []string
	for _, rel := range stored {
		in := false
		for dir := path.Dir(rel); dir != TrialsDir && dir != "." && !in; dir = path.Dir(dir) {
			in = dirs[dir]
		}
		if !in {
			continue
		}
		if _, err := os.Stat(d.File(rel)); errors.Is(err, fs.ErrNotExist) {
			want = append(want, rel)
		}
	}
	return d.fetchFiles(ctx, store, runID, want)
}

// fetchFiles fetches the stored files rels (run-relative) of run runID into
// the directory, a few at once.
func (d RunDir) fetchFiles(ctx context.Context, store artifacts.Store, runID string, rels []string) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(fetchConcurrency)
	for _, rel := range rels {
		g.Go(func() error {
			data, err := getObject(gctx, store, StoreKey(runID, rel))
			if err != nil {
				return err
			}
			return d.WriteFile(rel, data)
		})
	}
	return g.Wait()
}

// takeStoredLines appends to the JSON-lines file rel (ForcedFile, a spend
// file) the whole stored lines it lacks, synced.
func (d RunDir) takeStoredLines(ctx context.Context, store artifacts.Store, runID, rel string) error {
	data, err := getObject(ctx, store, StoreKey(runID, rel))
	if err != nil {
		return err
	}
	mine, err := os.ReadFile(d.File(rel))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	have := map[string]bool{}
	for line := range bytes.SplitSeq(mine, []byte("\n")) {
		have[string(line)] = true
	}
	var add []byte
	for line := range bytes.SplitSeq(data, []byte("\n")) {
		if !have[string(line)] && json.Valid(line) {
			add = append(append(add, line...), '\n')
		}
	}
	if len(add) == 0 {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(d.File(rel)), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(d.File(rel), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := f.Write(add); err != nil {
		return err
	}
	return f.Sync()
}

// rowID names one trial attempt: no two rows of a run share it.
type rowID struct {
	stage   pairbench.Stage
	intent  string
	pair    int
	arm     pairbench.Arm
	attempt int
}

func idOf(r pairbench.Row) rowID { return rowID{r.Stage, r.Intent, r.Pair, r.Arm, r.Attempt} }

// CheckStore refuses a store whose copy of run runID would be the run
// directory itself, or inside it, or hold it, however the two are spelt
// (a relative path, file://, ../, a symlink): every upload would then
// replace the file a runner is appending to, and rows would be lost.
func (d RunDir) CheckStore(store artifacts.Store, runID string) error {
	l, ok := store.(*artifacts.Local)
	if !ok {
		return nil
	}
	mine, err := realPath(d.Path)
	if err != nil {
		return err
	}
	theirs, err := realPath(filepath.Join(l.Root(), runID))
	if err != nil {
		return err
	}
	if within(mine, theirs) || within(theirs, mine) {
		return fmt.Errorf("--store %s holds run %s at %s, which is its run directory %s (or overlaps it): a store must be another place than --runs-dir",
			l.Root(), runID, theirs, d.Path)
	}
	return nil
}

// realPath resolves p to an absolute path with every symlink of its
// longest existing ancestor resolved.
func realPath(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	var rest []string
	for dir := abs; ; dir = filepath.Dir(dir) {
		if real, err := filepath.EvalSymlinks(dir); err == nil {
			return filepath.Join(append([]string{real}, rest...)...), nil
		}
		if dir == filepath.Dir(dir) {
			return abs, nil
		}
		rest = append([]string{filepath.Base(dir)}, rest...)
	}
}

// within reports whether path p is dir or inside it.
func within(p, dir string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

// ShardsError lists why a stored run's rows files do not belong to its plan.
type ShardsError struct {
	RunID    string
	Problems []string
}

func (e *ShardsError) Error() string {
	return fmt.Sprintf("run %s: the shards do not belong to its plan:\n  %s", e.RunID, strings.Join(e.Problems, "\n  "))
}

// ErrNoRows is matched by Fetch's error for a run the store holds no
// rows of yet.
var ErrNoRows = errors.New("no rows yet")

// Fetch gathers run runID from store into the run directory, which must be
// missing or empty: the plan, every rows file and, with trials, every trial
// directory. Before it writes anything it checks that every rows file
// belongs to the stored plan (each row carries the plan's run id and names
// a planned intent and, for pairs, a planned pair in its planned order, and
// no pair has rows in two files); a mismatch fails with a *ShardsError
// listing every problem. Partial last lines are returned as warnings.
func (d RunDir) Fetch(ctx context.Context, store artifacts.Store, runID string, trials bool) (*Plan, []Problem, error) {
	var warnings []Problem
	if err := d.startFetch(runID); err != nil {
		return nil, warnings, err
	}
	prefix := runID + "/"
	stored, err := store.List(ctx, prefix)
	if err != nil {
		return nil, warnings, fmt.Errorf("list run %s: %w", runID, err)
	}
	objects := map[string][]byte{}
	var trialFiles []string
	for _, info := range stored {
		rel := strings.TrimPrefix(info.Key, prefix)
		if _, isRows := ShardOf(rel); isRows || rel == PlanFile || rel == ForcedFile {
			objects[rel] = nil
		} else if trials && IsTrialFile(rel) {
			trialFiles = append(trialFiles, rel)
		}
	}
	if _, ok := objects[PlanFile]; !ok {
		return nil, warnings, fmt.Errorf("run %s has no %s in the store %v (is the run id right? pairbench run stores it before its first trial)", runID, PlanFile, store)
	}
	if len(objects) == 1 {
		return nil, warnings, fmt.Errorf("run %s has %w in the store %v: neither %s nor any shards/<k>/%[4]s", runID, ErrNoRows, store, RowsFile)
	}
	for rel := range objects {
		if objects[rel], err = getObject(ctx, store, prefix+rel); err != nil {
			return nil, warnings, err
		}
	}
	var plan Plan
	if err := json.Unmarshal(objects[PlanFile], &plan); err != nil {
		return nil, warnings, fmt.Errorf("run %s: stored %s: %w", runID, PlanFile, err)
	}
	if err := plan.Validate(); err != nil {
		return nil, warnings, fmt.Errorf("run %s: stored %s: %w", runID, PlanFile, err)
	}
	if plan.RunID != runID {
		return nil, warnings, fmt.Errorf("run %s: stored %s is the plan of run %q", runID, PlanFile, plan.RunID)
	}
	warnings, err = checkRows(&plan, objects)
	if err != nil {
		return nil, warnings, err
	}
	for rel, data := range objects {
		if err := d.WriteFile(rel, data); err != nil {
			return nil, warnings, err
		}
	}
	if err := d.fetchFiles(ctx, store, runID, trialFiles); err != nil {
		return nil, warnings, err
	}
	if err := os.Remove(d.File(fetchMark)); err != nil {
		return nil, warnings, fmt.Errorf("finish the fetch: %w", err)
	}
	return &plan, warnings, nil
}

// checkRows checks that every rows file among objects belongs to plan:
// right run id, planned intents, and rows that are trials of the plan
// (PlanRows: planned pairs in their planned order, no repeated row), and no
// pair split over two files.
func checkRows(plan *Plan, objects map[string][]byte) (warnings []Problem, _ error) {
	judge := NewPlanRows(plan)
	var problems []string
	owner := map[pairbench.Key]string{} // pair → the rows file holding it
	// In byte order: rows.jsonl before shards/...; run.json is skipped.
	for _, rel := range slices.Sorted(maps.Keys(objects)) {
		if rel == PlanFile || rel == ForcedFile {
			continue
		}
		rows, partial, err := readRows(bytes.NewReader(objects[rel]), rel)
		warnings = append(warnings, partial...)
		if err != nil {
			return warnings, fmt.Errorf("run %s: %w", plan.RunID, err)
		}
		for i := range rows {
			r := &rows[i]
			where := fmt.Sprintf("%s row %d", rel, i+1)
			if r.RunID != plan.RunID {
				problems = append(problems, fmt.Sprintf("%s: run id %q, not %q", where, r.RunID, plan.RunID))
				continue
			}
			if judge.intent(r.Intent) == nil {
				problems = append(problems, fmt.Sprintf("%s: intent %s is not in the plan", where, r.Intent))
				continue
			}
			fault := judge.Fault(r)
			switch fault {
			case RowOfNoPlannedPair:
				problems = append(problems, fmt.Sprintf("%s: %s pair %d is not in the plan", where, r.Intent, r.Pair))
				continue
			case RowInAnotherOrder:
				problems = append(problems, fmt.Sprintf("%s: %s pair %d ran in order %s, planned %s", where, r.Intent, r.Pair, r.Order, judge.intent(r.Intent).pair(r.Pair).order()))
				continue
			}
			if r.Stage == pairbench.StagePair {
				switch key := r.Key(); {
				case owner[key] == "":
					owner[key] = rel
				case owner[key] != rel:
					problems = append(problems, fmt.Sprintf("%s: %s pair %d also has rows in %s (shards split differently)", where, r.Intent, r.Pair, owner[key]))
					continue
				}
			}
			if e := r.WebMCPEnv; e != nil && e.Mode != "" && e.Mode != plan.WebMCPMode() {
				problems = append(problems, fmt.Sprintf("%s: %s pair %d ran with --webmcp %s, the plan's is %s", where, r.Intent, r.Pair, e.Mode, plan.WebMCPMode()))
				continue
			}
			if fault == RowRepeated {
				problems = append(problems, fmt.Sprintf("%s: %s %s %d %s attempt %d repeats an earlier row", where, r.Intent, r.Stage, r.Pair, r.Arm, r.Attempt))
				continue
			}
			judge.Keep(r)
		}
	}
	if len(problems) > 0 {
		return warnings, &ShardsError{RunID: plan.RunID, Problems: problems}
	}
	return warnings, nil
}

// SiteDir holds the report site's pages beside report.html (package
// viewer writes them); PublishReport uploads them before the report.
const SiteDir = "intents"

// PublishReport uploads the run directory's report files to store under
// runID: first the report site's pages (SiteDir), then the report in
// PublishLast order, so report.json, the mark of a run published in full,
// comes last.
func (d RunDir) PublishReport(ctx context.Context, store artifacts.Store, runID string) error {
	var pages []string
	err := filepath.WalkDir(d.File(SiteDir), func(p string, e fs.DirEntry, err error) error {
		if err == nil && e.Type().IsRegular() && strings.HasSuffix(p, ".html") {
			rel, rerr := filepath.Rel(d.Path, p)
			pages = append(pages, filepath.ToSlash(rel))
			return rerr
		}
		return err
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("publish report: %w", err)
	}
	for _, name := range append(pages, PublishLast...) {
		f, err := os.Open(d.File(name))
		if err != nil {
			return fmt.Errorf("publish report: %w", err)
		}
		err = store.Put(ctx, StoreKey(runID, name), f)
		f.Close()
		if err != nil {
			return fmt.Errorf("publish %s: %w", StoreKey(runID, name), err)
		}
	}
	return nil
}

// maxReport bounds the report.json a reader takes in.
const maxReport = 64 << 20

// ReadStoredReport reads run runID's published report.json from store. A
// run that has published none fails with an error wrapping
// artifacts.ErrNotExist.
func ReadStoredReport(ctx context.Context, store artifacts.Store, runID string) (*report.Report, error) {
	key := StoreKey(runID, ReportJSON)
	r, err := store.Get(ctx, key)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	rep, err := report.ReadJSON(io.LimitReader(r, maxReport))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", key, err)
	}
	return rep, nil
}

// getObject reads a whole stored object.
func getObject(ctx context.Context, store artifacts.Store, key string) ([]byte, error) {
	r, err := store.Get(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("fetch %s: %w", key, err)
	}
	defer r.Close()
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("fetch %s: %w", key, err)
	}
	return data, nil
}

// fetchMark marks a directory Fetch is filling, holding the run id: a fetch
// that was killed leaves it, and the next Fetch of the same run starts the
// directory afresh instead of refusing it as not empty.
const fetchMark = ".fetching"

// startFetch makes d an empty directory marked as being fetched for runID:
// missing, empty, or left by a fetch of runID that did not finish.
func (d RunDir) startFetch(runID string) error {
	if mark, err := os.ReadFile(d.File(fetchMark)); err == nil && string(mark) == runID {
		entries, err := os.ReadDir(d.Path)
		if err != nil {
			return err
		}
		for _, e := range entries {
			if err := os.RemoveAll(filepath.Join(d.Path, e.Name())); err != nil {
				return fmt.Errorf("clear the unfinished fetch in %s: %w", d.Path, err)
			}
		}
	} else if err := requireEmptyDir(d.Path); err != nil {
		return err
	}
	return os.WriteFile(d.File(fetchMark), []byte(runID), 0o644)
}

// ErrNotEmpty is wrapped by Fetch's error for a directory that holds files.
var ErrNotEmpty = errors.New("not empty")

// requireEmptyDir creates dir, or checks that it exists and is empty, so a
// fetched run never mixes with files of another.
func requireEmptyDir(dir string) error {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return os.MkdirAll(dir, 0o755)
	case err != nil:
		return err
	case len(entries) > 0:
		return fmt.Errorf("%s: %w", dir, ErrNotEmpty)
	}
	return nil
}

// StoredPeerRows returns the rows the shards of a run split in n, all but
// shard except, have stored under runID so far (a shard not stored yet has
// none): what a shard takes its looks with, beside its own rows.
func StoredPeerRows(ctx context.Context, store artifacts.Store, runID string, n, except int) ([]pairbench.Row, error) {
	var rows []pairbench.Row
	for k := 1; k <= n; k++ {
		if k == except {
			continue
		}
		key := StoreKey(runID, RowsFileOf(k))
		data, err := getObject(ctx, store, key)
		if errors.Is(err, artifacts.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		some, _, err := readRows(bytes.NewReader(data), key)
		if err != nil {
			return nil, err
		}
		rows = append(rows, some...)
	}
	return rows, nil
}
