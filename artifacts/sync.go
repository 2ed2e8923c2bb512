package artifacts

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"
)

// syncConcurrency bounds the uploads one Sync runs at once.
const syncConcurrency = 4

// Syncer mirrors a local run directory into a Store under "<runID>/", as
// the run produces it: call Sync after each row or trial, and once more
// after writing the report. Each call uploads only files that changed since
// they were last uploaded, so a runner killed at any point loses at most
// what it wrote since its last Sync.
//
// Files and directories whose names start with a dot are never uploaded:
// write a file under a dot name and rename it into place to keep a half
// written file out of the store. The files the caller names as last are
// uploaded after every other, in the order named, so a reader that finds
// the final one finds the whole run (for a run, its report: see
// rundir.PublishLast).
//
// A Syncer is safe for concurrent use; concurrent Syncs run one at a time.
type Syncer struct {
	store Store
	dir   string
	runID string
	first []string // run-relative keys uploaded before all others, in order
	last  []string // run-relative keys uploaded after all others, in order

	// ready, when set, says whether the last files may go up now.
	ready func() (bool, error)
	// onUpload sees each key while its upload is under way.
	onUpload func(key string)
	// guarded files are never replaced in the store unless the stored copy
	// is the one this Syncer saw there or put there.
	guarded []string
	// tries is how many times one file's upload is tried; backoff the
	// first wait between tries, doubled after each.
	tries   int
	backoff time.Duration

	mu     sync.Mutex
	sent   map[string]stamp // run-relative key → local file state when last uploaded; nil until the first Sync
	stored map[string]int64 // guarded key → the stored size this Syncer saw or put (-1: none)
	// storedMu guards stored's values during a Sync's concurrent uploads.
	storedMu sync.Mutex
}

// ErrChanged is wrapped by a Sync error for a guarded file whose stored
// copy changed since this Syncer saw it: another writer holds the run.
var ErrChanged = errors.New("changed in the store by another writer")

// Guard makes Sync refuse to replace the stored copy of each file named
// (run-relative) unless it is the copy this Syncer saw at its first Sync or
// put since: a file another writer changed meanwhile is never overwritten
// with one that lacks what it wrote. Call it before the first Sync.
func (s *Syncer) Guard(rels ...string) { s.guarded = append(s.guarded, rels...) }

// HoldLastUntil makes Sync upload the files named last only when ready
// says so (for a run: once its report is final), so their presence in the
// store keeps its meaning. Call it before the first Sync.
func (s *Syncer) HoldLastUntil(ready func() (bool, error)) { s.ready = ready }

// UploadFirst makes Sync upload the files named first (slash paths relative
// to the directory) before every other file, in the order given: no other
// file goes up until they are up, so the store never holds files that
// depend on one it lacks.
func (s *Syncer) UploadFirst(first ...string) { s.first = first }

// OnUpload, when set, sees each store key while its upload is under way:
// once the store has read half the file's bytes (all of an empty file's),
// before it reads on, from the goroutine reading them. A runner killed
// there leaves the upload unfinished. Call it before the first Sync.
func (s *Syncer) OnUpload(f func(key string)) { s.onUpload = f }

// Retry sets how many times one file's upload is tried (at least 1) and the
// first wait between tries, doubled after each; the default is 3 tries from
// 500ms. A store's own retries (S3's) happen within each try.
func (s *Syncer) Retry(tries int, backoff time.Duration) { s.tries, s.backoff = max(tries, 1), backoff }

// stamp is what Syncer compares to decide that a local file changed.
type stamp struct {
	size    int64
	modTime time.Time
}

func (a stamp) same(b stamp) bool { return a.size == b.size && a.modTime.Equal(b.modTime) }

// SyncResult says what one Sync did.
type SyncResult struct {
	Uploaded  []string // store keys uploaded, in upload order for report files
	Unchanged int      // files skipped because the store already has them
}

// NewSyncer returns a Syncer that mirrors dir into store under runID, which
// must be a single key segment. The files last names (slash paths relative
// to dir) are uploaded after every other file, in the order given.
func NewSyncer(store Store, dir, runID string, last ...string) (*Syncer, error) {
	if err := ValidKey(runID); err != nil {
		return nil, fmt.Errorf("artifacts: run id: %w", err)
	}
	if strings.Contains(runID, "/") {
		return nil, fmt.Errorf("artifacts: run id %q: %w: must be one segment", runID, ErrInvalidKey)
	}
	return &Syncer{store: store, dir: dir, runID: runID, last: last, tries: 3, backoff: 500 * time.Millisecond}, nil
}

// Sync uploads every file in the run directory that is new or changed.
//
// The first Sync of a Syncer (for example after a runner restarts) asks the
// store what it already holds and skips files whose stored copy has the same
// size and is no older than the local file; later Syncs compare with what
// this Syncer uploaded. Each file's upload is tried again after a failure
// (see Retry), and a file that still fails does not stop the others: the
// error joins every file that failed, files uploaded stay uploaded, and the
// next Sync tries the rest again. The last files wait until every other
// file is up.
func (s *Syncer) Sync(ctx context.Context) (SyncResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()

	files, err := s.scan()
	if err != nil {
		return SyncResult{}, err
	}
	if s.sent == nil {
		if err := s.seed(ctx, files); err != nil {
			return SyncResult{}, err
		}
	}

	var res SyncResult
	var first, body, last []string
	for rel, st := range files {
		if prev, ok := s.sent[rel]; ok && prev.same(st) {
			res.Unchanged++
			continue
		}
		if slices.Contains(s.first, rel) {
			first = append(first, rel)
		} else if slices.Contains(s.last, rel) {
			last = append(last, rel)
		} else {
			body = append(body, rel)
		}
	}
	slices.SortFunc(first, func(a, b string) int { return slices.Index(s.first, a) - slices.Index(s.first, b) })
	slices.Sort(body)
	slices.SortFunc(last, func(a, b string) int { return slices.Index(s.last, a) - slices.Index(s.last, b) })

	for _, rel := range first {
		st, ok, err := s.upload(ctx, rel)
		if err != nil {
			return res, err
		}
		if ok {
			s.record(&res, rel, st)
		}
	}

	var (
		mu   sync.Mutex // guards res.Uploaded, s.sent and errs inside the group
		errs []error
		g    errgroup.Group
	)
	g.SetLimit(syncConcurrency)
	for _, rel := range body {
		g.Go(func() error {
			st, ok, err := s.upload(ctx, rel)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
			} else if ok {
				s.record(&res, rel, st)
			}
			return nil
		})
	}
	_ = g.Wait() // the uploads record their errors
	slices.Sort(res.Uploaded)
	if len(errs) > 0 {
		return res, errors.Join(errs...)
	}
	if len(last) > 0 && s.ready != nil {
		ready, err := s.ready()
		if err != nil || !ready {
			return res, err
		}
	}
	for _, rel := range last {
		st, ok, err := s.upload(ctx, rel)
		if err != nil {
			return res, err
		}
		if ok {
			s.record(&res, rel, st)
		}
	}
	return res, nil
}

func (s *Syncer) record(res *SyncResult, rel string, st stamp) {
	s.sent[rel] = st
	res.Uploaded = append(res.Uploaded, s.key(rel))
}

func (s *Syncer) key(rel string) string { return s.runID + "/" + rel }

// scan lists the run directory's regular files by run-relative key.
func (s *Syncer) scan() (map[string]stamp, error) {
	files := map[string]stamp{}
	err := filepath.WalkDir(s.dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && p != s.dir {
				return nil // removed while walking
			}
			return err
		}
		if p == s.dir {
			return nil
		}
		if strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		rel, err := filepath.Rel(s.dir, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if err := ValidKey(rel); err != nil {
			return fmt.Errorf("file %s: %w", p, err)
		}
		fi, err := d.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		} else if err != nil {
			return err
		}
		files[rel] = stamp{size: fi.Size(), modTime: fi.ModTime()}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("artifacts: sync %s: %w", s.dir, err)
	}
	return files, nil
}

// seed fills s.sent from what the store already holds for the run.
func (s *Syncer) seed(ctx context.Context, files map[string]stamp) error {
	stored, err := s.store.List(ctx, s.runID+"/")
	if err != nil {
		return fmt.Errorf("artifacts: sync %s: %w", s.runID, err)
	}
	s.sent = map[string]stamp{}
	s.stored = map[string]int64{}
	for _, rel := range s.guarded {
		s.stored[rel] = -1
	}
	for _, o := range stored {
		if _, ok := s.stored[strings.TrimPrefix(o.Key, s.runID+"/")]; ok {
			s.stored[strings.TrimPrefix(o.Key, s.runID+"/")] = o.Size
		}
		rel := strings.TrimPrefix(o.Key, s.runID+"/")
		local, ok := files[rel]
		// Stores keep modification times to the second at best.
		if ok && o.Size == local.size && !o.ModTime.Before(local.modTime.Truncate(time.Second)) {
			s.sent[rel] = local
		}
	}
	return nil
}

// upload tries put up to s.tries times, waiting between tries.
func (s *Syncer) upload(ctx context.Context, rel string) (st stamp, ok bool, err error) {
	wait := s.backoff
	for try := 1; ; try++ {
		st, ok, err = s.put(ctx, rel)
		if err == nil || try >= s.tries || errors.Is(err, ErrChanged) || errors.Is(err, ErrInvalidKey) || ctx.Err() != nil {
			return st, ok, err
		}
		select {
		case <-ctx.Done():
			return st, ok, err
		case <-time.After(wait):
		}
		wait *= 2
	}
}

// put copies one file to the store and returns its state as of just
// before it was read, so a write during the upload is caught next time.
// A file removed since the scan is skipped (ok is false). A guarded file
// is put only over the stored copy this Syncer knows.
func (s *Syncer) put(ctx context.Context, rel string) (st stamp, ok bool, err error) {
	f, err := os.Open(filepath.Join(s.dir, filepath.FromSlash(rel)))
	if errors.Is(err, fs.ErrNotExist) {
		return stamp{}, false, nil
	} else if err != nil {
		return stamp{}, false, fmt.Errorf("artifacts: sync: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return stamp{}, false, fmt.Errorf("artifacts: sync: %w", err)
	}
	s.storedMu.Lock()
	known, guarded := s.stored[rel]
	s.storedMu.Unlock()
	if guarded {
		info, err := s.store.Stat(ctx, s.key(rel))
		switch {
		case errors.Is(err, ErrNotExist):
			info.Size = -1
		case err != nil:
			return stamp{}, false, fmt.Errorf("artifacts: sync: %w", err)
		}
		if info.Size != known {
			return stamp{}, false, fmt.Errorf("artifacts: sync %s: %w (stored size %d, this runner saw %d); not overwritten", s.key(rel), ErrChanged, info.Size, known)
		}
	}
	// Upload exactly the bytes present now, even if the file grows meanwhile.
	var body io.Reader = io.NewSectionReader(f, 0, fi.Size())
	if s.onUpload != nil {
		key := s.key(rel)
		body = &halfway{SectionReader: io.NewSectionReader(f, 0, fi.Size()), at: func() { s.onUpload(key) }}
	}
	if err := s.store.Put(ctx, s.key(rel), body); err != nil {
		return stamp{}, false, fmt.Errorf("artifacts: upload %s: %w", s.key(rel), err)
	}
	if guarded {
		s.storedMu.Lock()
		s.stored[rel] = fi.Size()
		s.storedMu.Unlock()
	}
	return stamp{size: fi.Size(), modTime: fi.ModTime()}, true, nil
}

// halfway is an upload's body that calls at once, the first time it is
// read from with half its bytes read already (by Read or ReadAt, which a
// store may call from several goroutines).
type halfway struct {
	*io.SectionReader
	at   func()
	read atomic.Int64
	once sync.Once
}

func (h *halfway) Read(p []byte) (int, error) {
	h.check()
	n, err := h.SectionReader.Read(p)
	h.read.Add(int64(n))
	return n, err
}

func (h *halfway) ReadAt(p []byte, off int64) (int, error) {
	h.check()
	n, err := h.SectionReader.ReadAt(p, off)
	h.read.Add(int64(n))
	return n, err
}

func (h *halfway) check() {
	if 2*h.read.Load() >= h.Size() {
		h.once.Do(h.at)
	}
}
