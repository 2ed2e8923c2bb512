package runner

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
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sync/errgroup"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/artifacts"
	"github.com/pairbench/pairbench/stats"
)

// A run is stored under "<run id>/" in an artifact store, with the layout it
// has on disk.

// StoreKey returns the store key of the run-relative file rel of run runID.
func StoreKey(runID, rel string) string { return runID + "/" + rel }

// fetchConcurrency bounds the downloads one Fetch runs at once.
const fetchConcurrency = 4

// Syncer returns a Syncer that mirrors the run directory into store under
// runID as the run produces it, the report files last (PublishLast).
func (d RunDir) Syncer(store artifacts.Store, runID string) (*artifacts.Syncer, error) {
	return artifacts.NewSyncer(store, d.Path, runID, PublishLast...)
}

// FetchPlan copies run runID's stored plan into the run directory when the
// directory has none yet, and reports whether it did. A run without a
// stored plan is left to be planned here.
func (d RunDir) FetchPlan(ctx context.Context, store artifacts.Store, runID string) (bool, error) {
	if _, err := os.Stat(d.File(PlanFile)); err == nil {
		return false, nil
	}
	data, err := getObject(ctx, store, StoreKey(runID, PlanFile))
	if errors.Is(err, artifacts.ErrNotExist) {
		return false, nil
	} else if err != nil {
		return false, err
	}
	return true, d.WriteFile(PlanFile, data)
}

// ShardsError lists why a stored run's rows files do not belong to its plan.
type ShardsError struct {
	RunID    string
	Problems []string
}

func (e *ShardsError) Error() string {
	return fmt.Sprintf("run %s: the shards do not belong to its plan:\n  %s", e.RunID, strings.Join(e.Problems, "\n  "))
}

// Fetch gathers run runID from store into the run directory, which must be
// missing or empty: the plan, every rows file and, with trials, every trial
// directory. Before it writes anything it checks that every rows file
// belongs to the stored plan (each row carries the plan's run id and names
// a planned intent and, for pairs, a planned pair in its planned order, and
// no pair has rows in two files); a mismatch fails with a *ShardsError
// listing every problem. Partial last lines are told to problem.
func (d RunDir) Fetch(ctx context.Context, store artifacts.Store, runID string, trials bool, problem func(Problem)) (*Plan, error) {
	if err := requireEmptyDir(d.Path); err != nil {
		return nil, err
	}
	prefix := runID + "/"
	stored, err := store.List(ctx, prefix)
	if err != nil {
		return nil, fmt.Errorf("list run %s: %w", runID, err)
	}
	objects := map[string][]byte{}
	var trialFiles []string
	for _, info := range stored {
		rel := strings.TrimPrefix(info.Key, prefix)
		if _, isRows := ShardOf(rel); isRows || rel == PlanFile {
			objects[rel] = nil
		} else if trials && IsTrialFile(rel) {
			trialFiles = append(trialFiles, rel)
		}
	}
	if _, ok := objects[PlanFile]; !ok {
		return nil, fmt.Errorf("run %s has no %s in the store %v (is the run id right? pairbench run stores it before its first trial)", runID, PlanFile, store)
	}
	if len(objects) == 1 {
		return nil, fmt.Errorf("run %s has no rows yet in the store %v: neither %s nor any shards/<k>/%[3]s", runID, store, RowsFile)
	}
	for rel := range objects {
		if objects[rel], err = getObject(ctx, store, prefix+rel); err != nil {
			return nil, err
		}
	}
	var plan Plan
	if err := json.Unmarshal(objects[PlanFile], &plan); err != nil {
		return nil, fmt.Errorf("run %s: stored %s: %w", runID, PlanFile, err)
	}
	if err := plan.Validate(); err != nil {
		return nil, fmt.Errorf("run %s: stored %s: %w", runID, PlanFile, err)
	}
	if plan.RunID != runID {
		return nil, fmt.Errorf("run %s: stored %s is the plan of run %q", runID, PlanFile, plan.RunID)
	}
	if err := checkRows(&plan, objects, problem); err != nil {
		return nil, err
	}
	for rel, data := range objects {
		if err := d.WriteFile(rel, data); err != nil {
			return nil, err
		}
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(fetchConcurrency)
	for _, rel := range trialFiles {
		g.Go(func() error {
			data, err := getObject(gctx, store, prefix+rel)
			if err != nil {
				return err
			}
			return d.WriteFile(rel, data)
		})
	}
	return &plan, g.Wait()
}

// checkRows checks that every rows file among objects belongs to plan:
// right run id, planned intents, planned pairs in their planned order, and
// no pair split over two files.
func checkRows(plan *Plan, objects map[string][]byte, problem func(Problem)) error {
	orders := map[pairbench.Key]pairbench.Order{}
	planned := map[string]bool{}
	for _, in := range plan.Intents {
		planned[in.ID] = true
		for _, p := range in.Pairs {
			orders[pairbench.Key{Intent: in.ID, Pair: p.Pair}] = p.Order
		}
	}
	var problems []string
	owner := map[pairbench.Key]string{} // pair → the rows file holding it
	// In byte order: rows.jsonl before shards/...; run.json is skipped.
	for _, rel := range slices.Sorted(maps.Keys(objects)) {
		if rel == PlanFile {
			continue
		}
		rows, err := readRows(bytes.NewReader(objects[rel]), rel, problem)
		if err != nil {
			return fmt.Errorf("run %s: %w", plan.RunID, err)
		}
		for i, r := range rows {
			where := fmt.Sprintf("%s row %d", rel, i+1)
			switch {
			case r.RunID != plan.RunID:
				problems = append(problems, fmt.Sprintf("%s: run id %q, not %q", where, r.RunID, plan.RunID))
				continue
			case !planned[r.Intent]:
				problems = append(problems, fmt.Sprintf("%s: intent %s is not in the plan", where, r.Intent))
				continue
			case r.Stage == pairbench.StageAdoption:
				continue
			}
			key := r.Key()
			want, ok := orders[key]
			switch {
			case !ok:
				problems = append(problems, fmt.Sprintf("%s: %s pair %d is not in the plan", where, r.Intent, r.Pair))
			case r.Order != want:
				problems = append(problems, fmt.Sprintf("%s: %s pair %d ran in order %s, planned %s", where, r.Intent, r.Pair, r.Order, want))
			case owner[key] == "":
				owner[key] = rel
			case owner[key] != rel:
				problems = append(problems, fmt.Sprintf("%s: %s pair %d also has rows in %s (shards split differently)", where, r.Intent, r.Pair, owner[key]))
			}
		}
	}
	if len(problems) > 0 {
		return &ShardsError{RunID: plan.RunID, Problems: problems}
	}
	return nil
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
func ReadStoredReport(ctx context.Context, store artifacts.Store, runID string) (*stats.Report, error) {
	key := StoreKey(runID, ReportJSON)
	r, err := store.Get(ctx, key)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	rep, err := stats.ReadJSON(io.LimitReader(r, maxReport))
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
