package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sync/errgroup"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/artifacts"
	"github.com/pairbench/pairbench/runner"
)

// mergeOptions are the flags of pairbench merge.
type mergeOptions struct {
	Store  string
	RunID  string
	Out    string
	Trials bool
	// Report writes the report into Out and publishes it to the store.
	Report bool
	// LinkTTL is how long the printed report link works.
	LinkTTL time.Duration
}

// fetchConcurrency bounds the downloads one merge runs at once.
const fetchConcurrency = 4

// shardRowsKey matches a shard's rows file under a run: shards/<k>/rows.jsonl.
var shardRowsKey = regexp.MustCompile(`^shards/([1-9][0-9]*)/rows\.jsonl$`)

func newMergeCmd() *cobra.Command {
	o := mergeOptions{LinkTTL: artifacts.MaxPresignTTL}
	cmd := &cobra.Command{
		Use:   "merge --store LOCATION --run-id ID --out DIR",
		Short: "Fetch a run split across runners from the artifact store into one run directory",
		Long: `merge gathers a run whose shards ran on different runners (pairbench run
--shard k/n --store LOCATION): it fetches the frozen plan (run.json), every
shards/<k>/rows.jsonl and rows.jsonl of run ID from the store into DIR, and,
with --trials, every trial directory. DIR must be missing or empty.

Before anything is written, merge checks that every shard belongs to the
stored plan: each row carries the plan's run id, names a planned intent, and
(for pairs) a planned pair in its planned order (AB or BA); and no pair has
rows in two shards, which would mean the shards were split differently. Any
mismatch fails the merge (exit 1) with every problem listed.

The result is a run directory that 'pairbench report DIR' reads (it combines
the shards). With --report, merge writes that report itself and publishes it
to the store under ID/ (report.html and report.md first, report.json last,
so a reader that finds report.json finds the whole report); it then prints,
last, a link to report.html valid for --link-ttl (a presigned https link for
S3, a file:// URL for a directory store).

Stdout: DIR, then with --report the paths written and the link, one per line.

Examples:
  # the aggregate job of a sharded bench
  pairbench merge --store s3://bench/runs --run-id pr42-abc --out merged/pr42-abc --report

  # keep the transcripts too, and report by hand
  pairbench merge --store /srv/runs --run-id r7 --out /tmp/r7 --trials
  pairbench report /tmp/r7`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageError{fmt.Errorf("merge takes no arguments, got %q", args)}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.Store == "" || o.RunID == "" || o.Out == "" {
				return usageError{errors.New("merge needs --store, --run-id and --out")}
			}
			if err := artifacts.ValidKey(o.RunID); err != nil || strings.Contains(o.RunID, "/") {
				return usageError{fmt.Errorf("--run-id %q: want a plain name", o.RunID)}
			}
			if o.LinkTTL <= 0 || o.LinkTTL > artifacts.MaxPresignTTL {
				return usageError{fmt.Errorf("--link-ttl %v: want more than 0 and at most %v", o.LinkTTL, artifacts.MaxPresignTTL)}
			}
			return runMerge(cmd.Context(), o, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	f := cmd.Flags()
	f.StringVar(&o.Store, "store", "", "artifact store holding the run: a directory or s3://bucket/prefix (see docs/artifacts.md)")
	f.StringVar(&o.RunID, "run-id", "", "id of the run to merge")
	f.StringVar(&o.Out, "out", "", "run directory to create (missing or empty)")
	f.BoolVar(&o.Trials, "trials", false, "also fetch every trial directory (transcripts, setup, webmcp logs)")
	f.BoolVar(&o.Report, "report", false, "write the report into --out and publish it to the store")
	f.DurationVar(&o.LinkTTL, "link-ttl", o.LinkTTL, "how long the printed report link works (at most 168h)")
	return cmd
}

// MergeError lists why a run's shards cannot be merged.
type MergeError struct {
	RunID    string
	Problems []string
}

func (e *MergeError) Error() string {
	return fmt.Sprintf("run %s: the shards do not belong to its plan:\n  %s", e.RunID, strings.Join(e.Problems, "\n  "))
}

// runMerge fetches, checks and (with o.Report) reports and publishes a run.
func runMerge(ctx context.Context, o mergeOptions, stdout, stderr io.Writer) error {
	if err := requireEmptyDir(o.Out); err != nil {
		return err
	}
	store, err := artifacts.Open(ctx, o.Store)
	if err != nil {
		return err
	}
	prefix := o.RunID + "/"
	stored, err := store.List(ctx, prefix)
	if err != nil {
		return fmt.Errorf("list run %s in %s: %w", o.RunID, o.Store, err)
	}
	objects := map[string][]byte{}
	var trials []string
	for _, info := range stored {
		rel := strings.TrimPrefix(info.Key, prefix)
		switch {
		case rel == "run.json", rel == "rows.jsonl", shardRowsKey.MatchString(rel):
			objects[rel] = nil
		case o.Trials && strings.HasPrefix(rel, "trials/"):
			trials = append(trials, rel)
		}
	}
	if _, ok := objects["run.json"]; !ok {
		return fmt.Errorf("run %s has no run.json in %s (is the run id right? pairbench run stores run.json before its first trial)", o.RunID, o.Store)
	}
	if len(objects) == 1 {
		return fmt.Errorf("run %s in %s has no rows yet: neither rows.jsonl nor any shards/<k>/rows.jsonl", o.RunID, o.Store)
	}
	for rel := range objects {
		if objects[rel], err = getObject(ctx, store, prefix+rel); err != nil {
			return err
		}
	}
	var plan runner.Plan
	if err := json.Unmarshal(objects["run.json"], &plan); err != nil {
		return fmt.Errorf("run %s: stored run.json: %w", o.RunID, err)
	}
	if err := plan.Validate(); err != nil {
		return fmt.Errorf("run %s: stored run.json: %w", o.RunID, err)
	}
	if plan.RunID != o.RunID {
		return fmt.Errorf("run %s: stored run.json is the plan of run %q", o.RunID, plan.RunID)
	}
	if err := checkShards(&plan, objects, stderr); err != nil {
		return err
	}

	for rel, data := range objects {
		if err := writeRunFile(o.Out, rel, data); err != nil {
			return err
		}
	}
	if err := fetchAll(ctx, store, prefix, trials, o.Out); err != nil {
		return err
	}
	fmt.Fprintln(stdout, o.Out)
	if !o.Report {
		return nil
	}
	if err := runReport(o.Out, "", "", stdout, stderr); err != nil {
		return err
	}
	return publishReport(ctx, store, o, stdout)
}

// checkShards checks that every rows file of a run belongs to plan: right
// run id, planned intents, planned pairs in their planned order, and no
// pair split over two files.
func checkShards(plan *runner.Plan, objects map[string][]byte, stderr io.Writer) error {
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
	for _, rel := range sortedKeys(objects) {
		if rel == "run.json" {
			continue
		}
		rows, partial, err := pairbench.ReadRows(bytes.NewReader(objects[rel]))
		var rowErr *pairbench.RowError
		if errors.As(err, &rowErr) {
			return fmt.Errorf("run %s: %s:%d: %w", plan.RunID, rel, rowErr.Line, rowErr.Err)
		} else if err != nil {
			return fmt.Errorf("run %s: %s: %w", plan.RunID, rel, err)
		}
		if partial > 0 {
			fmt.Fprintf(stderr, "pairbench: warning: %s:%d: skipped a partial last line (its writer was interrupted)\n", rel, partial)
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
			key := pairbench.Key{Intent: r.Intent, Pair: r.Pair}
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
		return &MergeError{RunID: plan.RunID, Problems: problems}
	}
	return nil
}

// sortedKeys returns m's keys in byte order, rows.jsonl before shards.
func sortedKeys(m map[string][]byte) []string {
	// "rows.jsonl" < "run.json" < "shards/..." in byte order.
	return slices.Sorted(maps.Keys(m))
}

// publishReport uploads the report files, report.json last, and prints a
// link to report.html.
func publishReport(ctx context.Context, store artifacts.Store, o mergeOptions, stdout io.Writer) error {
	for _, name := range []string{"report.html", "report.md", artifacts.ReportKey} {
		f, err := os.Open(filepath.Join(o.Out, name))
		if err != nil {
			return fmt.Errorf("publish report: %w", err)
		}
		err = store.Put(ctx, o.RunID+"/"+name, f)
		f.Close()
		if err != nil {
			return fmt.Errorf("publish %s/%s: %w", o.RunID, name, err)
		}
	}
	link, err := store.Presign(ctx, o.RunID+"/report.html", o.LinkTTL)
	if err != nil {
		return fmt.Errorf("link to the report: %w", err)
	}
	fmt.Fprintln(stdout, link)
	return nil
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

// fetchAll downloads the run-relative keys rels under prefix into dir.
func fetchAll(ctx context.Context, store artifacts.Store, prefix string, rels []string, dir string) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(fetchConcurrency)
	for _, rel := range rels {
		g.Go(func() error {
			data, err := getObject(gctx, store, prefix+rel)
			if err != nil {
				return err
			}
			return writeRunFile(dir, rel, data)
		})
	}
	return g.Wait()
}

// writeRunFile writes data at the run-relative key rel under dir, whole.
// rel must be a valid key, so it cannot leave dir.
func writeRunFile(dir, rel string, data []byte) error {
	if err := artifacts.ValidKey(rel); err != nil {
		return fmt.Errorf("refusing to write stored file: %w", err)
	}
	path := filepath.Join(dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return writeFileAtomic(path, data)
}

// requireEmptyDir creates dir, or checks that it exists and is empty, so a
// merge never mixes with files of another run.
func requireEmptyDir(dir string) error {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return os.MkdirAll(dir, 0o755)
	case err != nil:
		return fmt.Errorf("--out %s: %w", dir, err)
	case len(entries) > 0:
		return usageError{fmt.Errorf("--out %s is not empty; merge into a new directory", dir)}
	}
	return nil
}

// fetchStoredPlan copies the run's stored run.json into the local run
// directory dir when dir has none yet, and reports whether it did. A run
// without a stored plan is left to be planned here.
func fetchStoredPlan(ctx context.Context, store artifacts.Store, runID, dir string) (bool, error) {
	local := filepath.Join(dir, "run.json")
	if _, err := os.Stat(local); err == nil {
		return false, nil
	}
	data, err := getObject(ctx, store, runID+"/run.json")
	if errors.Is(err, artifacts.ErrNotExist) {
		return false, nil
	} else if err != nil {
		return false, err
	}
	if err := writeRunFile(dir, "run.json", data); err != nil {
		return false, err
	}
	return true, nil
}
