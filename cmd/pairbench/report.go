package main

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/runner"
	"github.com/pairbench/pairbench/stats"
)

func newReportCmd() *cobra.Command {
	var out, link string
	cmd := &cobra.Command{
		Use:   "report RUN_DIR",
		Short: "Compute a run's verdict and write report.json, report.md and report.html",
		Long: `report reads a run directory's frozen plan (run.json) and its trial rows
(rows.jsonl), computes every statistic and label, and writes three renderings
of the same report:

  report.json  for machines (versioned; see docs/statistics.md)
  report.md    for a pull-request comment: verdict line first, always under
               60,000 characters (details are trimmed first, with a link)
  report.html  one self-contained page with plots; no JavaScript, no network

The rows are rows.jsonl plus, for a run split across runners, every
shards/<k>/rows.jsonl (docs/rows.md). report can run at any time, also while
the run is still going: a last line that a writer is still appending is
skipped with a warning. A row that does not parse fails the report and names
its file and line. Each report file is replaced whole, so a reader never sees
half a report. The paths written are printed, one per line.

Examples:
  # the example run, whose rows show every label
  pairbench report examples/runs/demo

  # write elsewhere and link the comment to where report.html will be served
  pairbench report runs/r42 --out /tmp/r42 --link https://ci.example/r42/report.html`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageError{fmt.Errorf("report takes one RUN_DIR, got %d arguments", len(args))}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runReport(args[0], out, link, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	cmd.Flags().StringVar(&out, "out", "", "directory to write the reports to (default RUN_DIR)")
	cmd.Flags().StringVar(&link, "link", "", "URL of the full report, linked from report.md")
	return cmd
}

// runReport builds the report of the run in dir and writes its three
// renderings to out (dir when empty), printing their paths to stdout and
// warnings to stderr.
func runReport(dir, out, link string, stdout, stderr io.Writer) error {
	plan, err := runner.ReadPlan(filepath.Join(dir, "run.json"))
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%s has no run.json, so it is not a run directory (pairbench run writes run.json before its first trial)", dir)
	}
	if err != nil {
		return err
	}
	rows, err := readRunRows(dir, plan.RunID, stderr)
	if err != nil {
		return err
	}
	rep := stats.Build(plan.StatsPlan(), rows)

	if out == "" {
		out = dir
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return fmt.Errorf("create report dir: %w", err)
	}
	files := []struct {
		name  string
		write func(io.Writer) error
	}{
		{"report.json", func(w io.Writer) error { return stats.WriteJSON(w, rep) }},
		{"report.md", func(w io.Writer) error {
			return stats.WriteMarkdown(w, rep, stats.MarkdownOptions{FullReportURL: link})
		}},
		{"report.html", func(w io.Writer) error { return stats.WriteHTML(w, rep) }},
	}
	for _, f := range files {
		var buf bytes.Buffer
		if err := f.write(&buf); err != nil {
			return err
		}
		path := filepath.Join(out, f.name)
		if err := writeFileAtomic(path, buf.Bytes()); err != nil {
			return err
		}
		fmt.Fprintln(stdout, path)
	}
	return nil
}

// readRunRows reads the rows of the run in dir: rows.jsonl and, for a run
// split across runners, every shards/<k>/rows.jsonl. A run with no rows
// file yet has no trials (a warning, no rows). In each file a partial last
// line is skipped with a warning naming it, and a bad line fails with its
// file and line number. Rows of another run id are left out with a
// warning: they would mix two runs' trials.
func readRunRows(dir, runID string, stderr io.Writer) ([]pairbench.Row, error) {
	shards, err := filepath.Glob(filepath.Join(dir, "shards", "*", "rows.jsonl"))
	if err != nil {
		return nil, fmt.Errorf("find shard rows: %w", err)
	}
	slices.SortStableFunc(shards, func(a, b string) int { return cmp.Compare(shardNumber(a), shardNumber(b)) })
	files := append([]string{filepath.Join(dir, "rows.jsonl")}, shards...)

	var rows []pairbench.Row
	found := false
	for _, path := range files {
		rs, ok, err := readRowsFile(path, stderr)
		if err != nil {
			return nil, err
		}
		found = found || ok
		rows = append(rows, rs...)
	}
	if !found {
		fmt.Fprintf(stderr, "pairbench: warning: %s has no rows.jsonl yet; reporting a run with no trials\n", dir)
	}

	kept := rows[:0]
	foreign := 0
	for _, r := range rows {
		if r.RunID != "" && r.RunID != runID {
			foreign++
			continue
		}
		kept = append(kept, r)
	}
	if foreign > 0 {
		fmt.Fprintf(stderr, "pairbench: warning: %s: left out %d rows whose run_id is not %q\n", dir, foreign, runID)
	}
	return kept, nil
}

// readRowsFile reads one rows file; ok is false when it does not exist.
func readRowsFile(path string, stderr io.Writer) (rows []pairbench.Row, ok bool, err error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("open rows: %w", err)
	}
	defer f.Close()

	rows, partial, err := pairbench.ReadRows(f)
	var rowErr *pairbench.RowError
	if errors.As(err, &rowErr) {
		return nil, true, fmt.Errorf("%s:%d: %w", path, rowErr.Line, rowErr.Err)
	}
	if err != nil {
		return nil, true, fmt.Errorf("%s: %w", path, err)
	}
	if partial > 0 {
		fmt.Fprintf(stderr, "pairbench: warning: %s:%d: skipped a partial last line (a writer was interrupted or is still appending)\n", path, partial)
	}
	return rows, true, nil
}

// shardNumber is k of .../shards/<k>/rows.jsonl, or -1 when k is not a
// number (sorted first, then by name).
func shardNumber(path string) int {
	k, err := strconv.Atoi(filepath.Base(filepath.Dir(path)))
	if err != nil {
		return -1
	}
	return k
}

// writeFileAtomic replaces path with data in one step: it writes a
// temporary file in the same directory, syncs it and renames it over path,
// so a reader sees the old file or the new one, never a part.
func writeFileAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name()) // fails harmlessly once renamed
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
