package rundir

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/pairbench/pairbench"
)

// RowQuery says which of a run's rows ScanRows gives.
type RowQuery struct {
	// File is one run-relative rows file, rows of every run id included;
	// "" is every rows file of the run: RowsFile and each shard's, in
	// RowsFiles order.
	File string
	// RunID, when set, leaves out rows of another run id: they would mix
	// two runs' trials.
	RunID string
	// Plan, when set, keeps only the rows that are trials of it
	// (PlanRows) and in force (Plan.RowInForce): trials of pairs past the
	// look the run stopped at are neither passed on nor counted as left
	// out.
	Plan *Plan
	// Skip leaves these fields empty in every row (see
	// pairbench.RowFields).
	Skip pairbench.RowFields
}

// RowsRead is what a scan of rows passed over: nothing a caller must stop
// for, all of it worth telling.
type RowsRead struct {
	// Warnings say what was skipped or left out, in the order found: a
	// partial last line (a writer killed mid-append, or one still
	// appending), rows of another run id or that are no trials of the
	// plan, a run with no rows file yet.
	Warnings []Problem
	// LeftOut counts the rows left out by RunID or Plan.
	LeftOut int
}

// ScanRows streams the rows q selects to fn, file by file in order, one
// row at a time (the *Row is valid during the call only), so that a run of
// any size is read in little memory. A missing rows file has no rows. A
// bad line fails the scan, naming its file and line; what the scan passed
// over is returned, never dropped silently.
func (d RunDir) ScanRows(q RowQuery, fn func(*pairbench.Row)) (RowsRead, error) {
	var read RowsRead
	files := []string{q.File}
	if q.File == "" {
		var err error
		if files, err = d.RowsFiles(); err != nil {
			return read, err
		}
		if len(files) == 0 {
			read.Warnings = append(read.Warnings, Problem{File: d.Path, Msg: "has no " + RowsFile + " yet; reporting a run with no trials"})
		}
	}
	var judge *PlanRows
	if q.Plan != nil {
		judge = NewPlanRows(q.Plan)
	}
	foreign := 0
	keep := func(r *pairbench.Row) {
		switch {
		case q.RunID != "" && r.RunID != "" && r.RunID != q.RunID:
			foreign++
		case judge != nil && (!judge.Keep(r) || !q.Plan.RowInForce(r)):
		default:
			fn(r)
		}
	}
	for _, rel := range files {
		warnings, err := d.scanRowsFile(rel, q.Skip, keep)
		read.Warnings = append(read.Warnings, warnings...)
		if err != nil {
			return read, err
		}
	}
	if foreign > 0 {
		read.LeftOut += foreign
		read.Warnings = append(read.Warnings, Problem{File: d.Path, Msg: fmt.Sprintf("left out %d rows whose run_id is not %q", foreign, q.RunID)})
	}
	if judge != nil {
		read.LeftOut += judge.Skipped()
		read.Warnings = append(read.Warnings, judge.Warnings(d.Path)...)
	}
	return read, nil
}

// scanRowsFile streams the run-relative rows file rel to fn, every run id
// included. A missing file has no rows.
func (d RunDir) scanRowsFile(rel string, skip pairbench.RowFields, fn func(*pairbench.Row)) ([]Problem, error) {
	name := d.File(rel)
	f, err := os.Open(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("open rows: %w", err)
	}
	defer f.Close()
	return scanRows(f, name, skip, fn)
}

// scanRows streams one rows stream named name (a file, or a stored
// object) to fn.
func scanRows(r io.Reader, name string, skip pairbench.RowFields, fn func(*pairbench.Row)) ([]Problem, error) {
	partial, err := pairbench.ScanRows(r, skip, func(row *pairbench.Row) error { fn(row); return nil })
	var rowErr *pairbench.RowError
	if errors.As(err, &rowErr) {
		return nil, fmt.Errorf("%s:%d: %w", name, rowErr.Line, rowErr.Err)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if partial > 0 {
		return []Problem{{File: name, Line: partial,
			Msg: "skipped a partial last line (a writer was interrupted or is still appending)"}}, nil
	}
	return nil, nil
}

// readRows reads one rows stream named name (a file, or a stored object)
// whole.
func readRows(r io.Reader, name string) ([]pairbench.Row, []Problem, error) {
	var rows []pairbench.Row
	warnings, err := scanRows(r, name, 0, func(row *pairbench.Row) { rows = append(rows, *row) })
	if err != nil {
		return nil, warnings, err
	}
	return rows, warnings, nil
}
