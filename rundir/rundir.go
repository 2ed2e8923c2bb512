package rundir

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/report"
)

// The files of a run, as slash paths relative to its directory. A run has
// the same layout on disk and under its prefix in an artifact store.
const (
	// PlanFile is the frozen plan, written once before the first trial.
	PlanFile = "run.json"
	// RowsFile holds one row per trial attempt of a run that is not
	// sharded; a shard's rows are in ShardRowsFile(k).
	RowsFile = "rows.jsonl"
	// ReportJSON, ReportMarkdown and ReportHTML are the report's three
	// renderings. ReportJSON is published last: a reader that finds it
	// finds the whole run.
	ReportJSON     = "report.json"
	ReportMarkdown = "report.md"
	ReportHTML     = "report.html"

	// ForcedFile lists the resumes forced past a changed plan (--force),
	// one JSON object per line; the report names them.
	ForcedFile = "forced.jsonl"

	lockFile  = ".lock" // a dot name: never uploaded
	shardsDir = "shards"
)

// TrialsDir holds every trial attempt's directory (TrialDir).
const TrialsDir = "trials"

// PublishLast lists the files a store gets after every other file of the
// run, in this order. ReportJSON comes last of all, so its presence in a
// store means the run is published in full.
var PublishLast = []string{ReportHTML, ReportMarkdown, ReportJSON}

// RunDir is one run's directory, and the one place that knows its layout:
//
//	run.json                     the frozen plan (Plan)
//	rows.jsonl                   one row per trial attempt, append-only, fsynced
//	shards/<k>/rows.jsonl        shard k's rows, when the run is split across runners
//	trials/<intent>/<pair>-<arm>[-<attempt>]/   one trial attempt's files
//	report.json|md|html          the report
//	forced.jsonl                 resumes forced past a changed plan
//	.lock                        held by the one runner working on the run
//
// Every package reads and writes a run through it. A RunDir is a value; it
// does no I/O until a method is called.
type RunDir struct {
	// Path is the directory on disk.
	Path string
}

// File returns the path on disk of the run-relative slash path rel.
func (d RunDir) File(rel string) string { return filepath.Join(d.Path, filepath.FromSlash(rel)) }

// RowsFileOf returns the run-relative rows file of shard k of a run split
// across runners, or RowsFile for k = 0 (a run that is not split).
func RowsFileOf(k int) string {
	if k == 0 {
		return RowsFile
	}
	return path.Join(shardsDir, strconv.Itoa(k), RowsFile)
}

// ShardOf reports which rows file rel is: 0 for RowsFile, k for shard k's,
// and ok false when rel is not a rows file of the run.
func ShardOf(rel string) (k int, ok bool) {
	if rel == RowsFile {
		return 0, true
	}
	dir, file := path.Split(rel)
	num, isShard := strings.CutPrefix(strings.TrimSuffix(dir, "/"), shardsDir+"/")
	if !isShard || file != RowsFile || num == "" || num[0] == '0' {
		return 0, false
	}
	k, err := strconv.Atoi(num)
	if err != nil || k < 1 || strconv.Itoa(k) != num {
		return 0, false
	}
	return k, true
}

// TrialDir returns the run-relative directory of a trial attempt:
// trials/<intent>/<pair>-<arm>, adoption-<pair>-<arm> for an adoption
// trial, with -<attempt> from the second attempt on, so every attempt keeps
// its own files.
func TrialDir(job Job, arm pairbench.Arm) string {
	name := strconv.Itoa(job.Pair) + "-" + string(arm)
	if job.Stage == pairbench.StageAdoption {
		name = "adoption-" + name
	}
	if job.Attempt > 1 {
		name += "-" + strconv.Itoa(job.Attempt)
	}
	return path.Join(TrialsDir, job.Intent, name)
}

// IsTrialFile reports whether rel lies in a trial directory.
func IsTrialFile(rel string) bool { return strings.HasPrefix(rel, TrialsDir+"/") }

// ReadPlan reads and validates the run's plan. A run without one fails with
// an error that matches fs.ErrNotExist and says the directory is not a run.
func (d RunDir) ReadPlan() (*Plan, error) {
	p, err := ReadPlan(d.File(PlanFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, noPlanError{d.Path}
	}
	return p, err
}

// noPlanError says a directory has no plan; it matches fs.ErrNotExist.
type noPlanError struct{ dir string }

func (e noPlanError) Error() string {
	return fmt.Sprintf("%s has no %s, so it is not a run directory (pairbench run writes %[2]s before its first trial)", e.dir, PlanFile)
}

func (e noPlanError) Unwrap() error { return fs.ErrNotExist }

// WritePlan freezes plan as the run's run.json, whole or not at all. The
// scripted model's address is this process's loopback port, so it is not
// frozen.
func (d RunDir) WritePlan(plan *Plan) error {
	frozen := *plan
	if frozen.Model.Scripted {
		frozen.Model.BaseURL = ""
	}
	b, err := json.MarshalIndent(&frozen, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", PlanFile, err)
	}
	return d.WriteFile(PlanFile, append(b, '\n'))
}

// WriteFile writes data at the run-relative slash path rel, whole: a reader
// sees the old file or the new one, never a part. rel must stay inside the
// run directory.
func (d RunDir) WriteFile(rel string, data []byte) error {
	if !fs.ValidPath(rel) || rel == "." {
		return fmt.Errorf("write %q: not a path inside the run directory", rel)
	}
	p := d.File(rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return fmt.Errorf("write %s: %w", p, err)
	}
	return writeFileAtomic(p, data)
}

// ForcedResume is one resume forced past a changed plan.
type ForcedResume struct {
	At      time.Time `json:"at"`
	Changes []string  `json:"changes"`
}

// RecordForced appends a forced resume to the run's ForcedFile, synced.
func (d RunDir) RecordForced(f ForcedResume) error {
	line, err := json.Marshal(f)
	if err != nil {
		return err
	}
	file, err := os.OpenFile(d.File(ForcedFile), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("record the forced resume: %w", err)
	}
	defer file.Close()
	if _, err := file.Write(append(line, '\n')); err != nil {
		return fmt.Errorf("record the forced resume: %w", err)
	}
	return file.Sync()
}

// ReadForced returns every forced resume of the run, oldest first; a run
// never forced has none. A line that does not parse (a writer killed
// mid-line) is skipped.
func (d RunDir) ReadForced() ([]ForcedResume, error) {
	b, err := os.ReadFile(d.File(ForcedFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("read %s: %w", ForcedFile, err)
	}
	var out []ForcedResume
	for line := range bytes.SplitSeq(b, []byte("\n")) {
		var f ForcedResume
		if len(bytes.TrimSpace(line)) > 0 && json.Unmarshal(line, &f) == nil {
			out = append(out, f)
		}
	}
	return out, nil
}

// SpendFileOf returns the run-relative file that records what runner k (0:
// a run not split) spent outside its rows: its smoke gates. One JSON object
// per line.
func SpendFileOf(k int) string {
	if k == 0 {
		return spendFile
	}
	return path.Join(shardsDir, strconv.Itoa(k), spendFile)
}

const spendFile = "spend.jsonl"

// Spend is one cost outside the rows.
type Spend struct {
	At      time.Time `json:"at"`
	What    string    `json:"what"`
	CostUSD float64   `json:"cost_usd"`
}

// RecordSpend appends a cost of runner k to its SpendFileOf(k), synced.
func (d RunDir) RecordSpend(k int, sp Spend) error {
	line, err := json.Marshal(sp)
	if err != nil {
		return err
	}
	p := d.File(SpendFileOf(k))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return fmt.Errorf("record spend: %w", err)
	}
	f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("record spend: %w", err)
	}
	defer f.Close()
	if _, err := f.Write(append(line, '\n')); err != nil {
		return fmt.Errorf("record spend: %w", err)
	}
	return f.Sync()
}

// ReadSpend returns what runner k spent outside its rows, in USD; a line
// that does not parse (a writer killed mid-line) is skipped.
func (d RunDir) ReadSpend(k int) (float64, error) {
	b, err := os.ReadFile(d.File(SpendFileOf(k)))
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	} else if err != nil {
		return 0, fmt.Errorf("read %s: %w", SpendFileOf(k), err)
	}
	total := 0.0
	for line := range bytes.SplitSeq(b, []byte("\n")) {
		var sp Spend
		if len(bytes.TrimSpace(line)) > 0 && json.Unmarshal(line, &sp) == nil {
			total += sp.CostUSD
		}
	}
	return total, nil
}

// CheckLayout refuses a run directory that this runner, shard k of n (0
// of 0 for a run not split), must not work on: see checkLayout. It reads
// the directory only.
func (d RunDir) CheckLayout(k, n int) error {
	files, err := d.RowsFiles()
	if err != nil {
		return err
	}
	_, err = os.Stat(d.File(PlanFile))
	return checkLayout(d.Path, err == nil, files, k, n)
}

// checkLayout refuses what would mix or lose trials: rows with no plan to
// match them to (run.json deleted, or never stored), rows of a run split
// across runners resumed whole, rows of a run not split resumed as a
// shard, and shards of another split. where names the directory or store.
func checkLayout(where string, hasPlan bool, rowsFiles []string, k, n int) error {
	if len(rowsFiles) > 0 && !hasPlan {
		return fmt.Errorf("%s holds rows (%s) but no %s: its trials cannot be matched to a plan, and a new one would count them as its own; restore %[3]s or use another --run-id",
			where, strings.Join(rowsFiles, ", "), PlanFile)
	}
	for _, rel := range rowsFiles {
		j, _ := ShardOf(rel)
		switch {
		case k == 0 && j > 0:
			return fmt.Errorf("%s holds the rows of a run split across runners (%s): resume each shard with --shard k/n, or merge them with pairbench merge", where, rel)
		case k > 0 && j == 0:
			return fmt.Errorf("%s holds the rows of a run that is not split (%s): it cannot be resumed as shard %d/%d", where, rel, k, n)
		case j > n:
			return fmt.Errorf("%s holds %s, so the run was split into more shards than %d: resume it with the split it was run with", where, rel, n)
		}
	}
	return nil
}

// ErrLocked is returned when another runner holds the run's lock.
var ErrLocked = errors.New("another runner holds this run")

// Lock is an exclusive hold on a run directory: one runner per run id.
type Lock struct{ f *os.File }

// Lock creates the run directory if needed and takes its lock without
// waiting. It fails with ErrLocked while another process holds it; the
// lock ends with Unlock or with the process, however it dies.
func (d RunDir) Lock() (*Lock, error) {
	if err := os.MkdirAll(d.Path, 0o755); err != nil {
		return nil, fmt.Errorf("create run dir: %w", err)
	}
	f, err := os.OpenFile(d.File(lockFile), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open run lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%s: %w", d.Path, ErrLocked)
		}
		return nil, fmt.Errorf("lock run: %w", err)
	}
	return &Lock{f: f}, nil
}

// Unlock releases the lock.
func (l *Lock) Unlock() error { return l.f.Close() }

// RowsFiles returns the run-relative rows files the run holds: RowsFile
// first, then every shard's by shard number.
func (d RunDir) RowsFiles() ([]string, error) {
	var files []string
	if _, err := os.Stat(d.File(RowsFile)); err == nil {
		files = append(files, RowsFile)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("find rows: %w", err)
	}
	entries, err := os.ReadDir(d.File(shardsDir))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("find shard rows: %w", err)
	}
	var shards []int
	for _, e := range entries {
		rel := path.Join(shardsDir, e.Name(), RowsFile)
		if k, ok := ShardOf(rel); ok {
			if _, err := os.Stat(d.File(rel)); err == nil {
				shards = append(shards, k)
			}
		}
	}
	slices.Sort(shards)
	for _, k := range shards {
		files = append(files, RowsFileOf(k))
	}
	return files, nil
}

// ReadReport reads the run's report.json.
func (d RunDir) ReadReport() (*report.Report, error) {
	f, err := os.Open(d.File(ReportJSON))
	if err != nil {
		return nil, fmt.Errorf("read the report: %w", err)
	}
	defer f.Close()
	rep, err := report.ReadJSON(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.Name(), err)
	}
	return rep, nil
}

// ReportOptions say how a report is rendered.
type ReportOptions struct {
	// Link is the full report's URL, linked from report.md.
	Link string
	// HTML says how report.html links the rest of the report site.
	HTML report.HTMLOptions
	// Wrote, if set, sees the path of each file once it is written.
	Wrote func(path string)
}

// WriteReport writes rep's three renderings into the run directory, each
// replaced whole, in PublishLast's order reversed (report.json first), and
// returns their paths in the order written.
func (d RunDir) WriteReport(rep *report.Report, o ReportOptions) ([]string, error) {
	render := map[string]func(io.Writer) error{
		ReportJSON: func(w io.Writer) error { return report.WriteJSON(w, rep) },
		ReportMarkdown: func(w io.Writer) error {
			return report.WriteMarkdown(w, rep, report.MarkdownOptions{FullReportURL: o.Link})
		},
		ReportHTML: func(w io.Writer) error { return report.WriteHTML(w, rep, o.HTML) },
	}
	var written []string
	for _, name := range slices.Backward(PublishLast) {
		var buf bytes.Buffer
		if err := render[name](&buf); err != nil {
			return written, err
		}
		if err := d.WriteFile(name, buf.Bytes()); err != nil {
			return written, err
		}
		written = append(written, d.File(name))
		if o.Wrote != nil {
			o.Wrote(d.File(name))
		}
	}
	return written, nil
}

// RowLog appends rows to a rows file, one fsynced line per row, so a killed
// runner loses at most the row being written (which readers then skip as a
// partial last line).
type RowLog struct {
	mu   sync.Mutex
	f    *os.File
	path string
}

// OpenRowLog opens the rows file of shard k (0: a run not split) for
// appending, creating it if needed. A partial last line left by a killed
// writer is cut off first, so the next row starts on a line of its own.
func (d RunDir) OpenRowLog(k int) (*RowLog, error) {
	p := d.File(RowsFileOf(k))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return nil, fmt.Errorf("create rows dir: %w", err)
	}
	f, err := os.OpenFile(p, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open rows: %w", err)
	}
	if err := truncatePartial(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("repair %s: %w", p, err)
	}
	return &RowLog{f: f, path: p}, nil
}

// truncatePartial cuts f after its last newline and leaves the offset at
// the end.
func truncatePartial(f *os.File) error {
	info, err := f.Stat()
	if err != nil {
		return err
	}
	size := info.Size()
	buf := make([]byte, 64<<10)
	end := size
	for end > 0 {
		n := min(int64(len(buf)), end)
		if _, err := f.ReadAt(buf[:n], end-n); err != nil {
			return err
		}
		for i := n - 1; i >= 0; i-- {
			if buf[i] == '\n' {
				keep := end - n + i + 1
				if keep != size {
					if err := f.Truncate(keep); err != nil {
						return err
					}
				}
				_, err := f.Seek(keep, 0)
				return err
			}
		}
		end -= n
	}
	if size > 0 {
		if err := f.Truncate(0); err != nil {
			return err
		}
	}
	_, err = f.Seek(0, 0)
	return err
}

// Append writes row as one line and syncs it to disk before returning. A
// row that cannot be written whole (a full disk) is cut off again, so the
// file always ends with a whole row.
func (l *RowLog) Append(row pairbench.Row) error {
	b, err := pairbench.AppendRow(nil, row)
	if err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	end, err := l.f.Seek(0, io.SeekCurrent)
	if err != nil {
		return fmt.Errorf("append row: %w", err)
	}
	undo := func(err error) error {
		if terr := l.f.Truncate(end); terr == nil {
			_, _ = l.f.Seek(end, io.SeekStart)
		}
		return err
	}
	if _, err := l.f.Write(b); err != nil {
		return undo(fmt.Errorf("append row to %s: %w", l.path, err))
	}
	if err := l.f.Sync(); err != nil {
		return undo(fmt.Errorf("sync rows of %s: %w", l.path, err))
	}
	return nil
}

// Path returns the file's path.
func (l *RowLog) Path() string { return l.path }

// Close closes the file.
func (l *RowLog) Close() error { return l.f.Close() }

// writeFileAtomic replaces path with data in one step: it writes a
// temporary file in the same directory, syncs it and renames it over path,
// so a reader sees the old file or the new one, never a part. The
// temporary file has a dot name, so a store sync never uploads it.
func writeFileAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name()) // fails harmlessly once renamed
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Chmod(0o644)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
