package artifacts

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

// tempPrefix starts the name of every file Local is still writing. Keys
// never start a segment with a dot, so no key can name one.
const tempPrefix = ".tmp-"

// Local is a Store in a directory on this host: the key "a/b.json" is the
// file <root>/a/b.json. It is the embedded default store.
//
// Put writes a temporary file next to the target, syncs it and renames it
// into place, so a reader sees the old file or the new one, never part of
// it. The writer holds the temporary file (an exclusive flock, which the
// kernel drops however the writer dies) until it has its final name, so
// the temporary files a killed writer left are told apart from those of
// live writers, in this process or another sharing the directory: each Put
// removes the abandoned ones in its target's directory (the next upload of
// the same run removes what a killed one left). One limitation follows from using a file tree: a key cannot also be
// the directory of another key ("a" and "a/b" cannot both exist), which S3
// allows; the run layout never needs both.
type Local struct {
	root string
}

var _ Store = (*Local)(nil)

// NewLocal returns a Store rooted at dir, creating the directory if needed.
func NewLocal(dir string) (*Local, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("artifacts: local store %q: %w", dir, err)
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return nil, fmt.Errorf("artifacts: local store: %w", err)
	}
	return &Local{root: abs}, nil
}

// Root returns the store's absolute directory.
func (l *Local) Root() string { return l.root }

// String describes the store for logs.
func (l *Local) String() string { return "local:" + l.root }

func (l *Local) path(key string) string {
	return filepath.Join(l.root, filepath.FromSlash(key))
}

// Put implements Store.
func (l *Local) Put(ctx context.Context, key string, r io.Reader) error {
	if err := ValidKey(key); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("artifacts: put %s: %w", key, err)
	}
	if err := l.put(ctx, key, r); err != nil {
		return fmt.Errorf("artifacts: put %s: %w", key, err)
	}
	return nil
}

func (l *Local) put(ctx context.Context, key string, r io.Reader) (err error) {
	dst := l.path(key)
	dir := filepath.Dir(dst)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	removeAbandoned(dir)
	f, err := createHeld(dir)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			os.Remove(f.Name())
			f.Close()
		}
	}()
	if _, err := io.Copy(f, ctxReader{ctx, r}); err != nil {
		return err
	}
	if err := f.Chmod(0o644); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := os.Rename(f.Name(), dst); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return syncDir(dir)
}

// createHeld creates a temporary file in dir and locks it, held until it is
// renamed and closed (see removeIfAbandoned). Between the creation and the
// lock the file is unheld, and a cleaner may take it for a killed writer's
// and remove it; the lock then comes on a file no longer in dir, and
// createHeld starts again with another.
func createHeld(dir string) (*os.File, error) {
	for {
		f, err := os.CreateTemp(dir, tempPrefix+"*")
		if err != nil {
			return nil, err
		}
		var st syscall.Stat_t
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if err == nil {
			err = syscall.Fstat(int(f.Fd()), &st)
		}
		if err != nil {
			os.Remove(f.Name())
			f.Close()
			return nil, err
		}
		if st.Nlink > 0 {
			return f, nil
		}
		f.Close() // a cleaner removed it before the lock
	}
}

// removeAbandoned removes the temporary files in dir whose writers have
// gone (see removeIfAbandoned).
func removeAbandoned(dir string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), tempPrefix) && e.Type().IsRegular() {
			removeIfAbandoned(filepath.Join(dir, e.Name()))
		}
	}
}

// removeIfAbandoned removes the temporary file p if nobody holds it: its
// writer has gone, or has just created it and not locked it yet, and will
// start again with another (see createHeld). The lock is kept until the
// file is removed, so a writer cannot take it in between. It is best
// effort: a file it may not open (another user's) or remove stays.
func removeIfAbandoned(p string) {
	f, err := os.Open(p)
	if err != nil {
		return
	}
	defer f.Close()
	if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil {
		os.Remove(p)
	}
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// ctxReader stops a copy once its context is done.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// Get implements Store.
func (l *Local) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	if err := ValidKey(key); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("artifacts: get %s: %w", key, err)
	}
	f, err := os.Open(l.path(key))
	if err != nil {
		return nil, l.pathErr("get", key, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("artifacts: get %s: %w", key, err)
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("artifacts: get %s: %w", key, ErrNotExist)
	}
	return f, nil
}

// Stat implements Store.
func (l *Local) Stat(ctx context.Context, key string) (Info, error) {
	if err := ValidKey(key); err != nil {
		return Info{}, err
	}
	return l.stat(ctx, "stat", key)
}

func (l *Local) stat(ctx context.Context, op, key string) (Info, error) {
	if err := ctx.Err(); err != nil {
		return Info{}, fmt.Errorf("artifacts: %s %s: %w", op, key, err)
	}
	fi, err := os.Stat(l.path(key))
	if err != nil {
		return Info{}, l.pathErr(op, key, err)
	}
	if !fi.Mode().IsRegular() {
		return Info{}, fmt.Errorf("artifacts: %s %s: %w", op, key, ErrNotExist)
	}
	return Info{Key: key, Size: fi.Size(), ModTime: fi.ModTime()}, nil
}

// isNotDir reports whether err says a path segment is a file, not a
// directory: the key's parent is itself an object.
func isNotDir(err error) bool { return errors.Is(err, syscall.ENOTDIR) }

// pathErr maps a missing file, or a file standing where a directory of the
// key should be, to ErrNotExist.
func (l *Local) pathErr(op, key string, err error) error {
	if errors.Is(err, fs.ErrNotExist) || isNotDir(err) {
		return fmt.Errorf("artifacts: %s %s: %w", op, key, ErrNotExist)
	}
	return fmt.Errorf("artifacts: %s %s: %w", op, key, err)
}

// List implements Store. Files still being written are not listed.
func (l *Local) List(ctx context.Context, prefix string) ([]Info, error) {
	if err := validPrefix(prefix); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("artifacts: list %q: %w", prefix, err)
	}
	// Walk only the deepest directory the prefix names in full.
	start := l.root
	if i := strings.LastIndex(prefix, "/"); i >= 0 {
		start = l.path(prefix[:i])
	}
	var out []Info
	err := filepath.WalkDir(start, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == start && (errors.Is(err, fs.ErrNotExist) || isNotDir(err)) {
				return fs.SkipAll
			}
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if strings.HasPrefix(d.Name(), ".") && p != start {
			if d.IsDir() {
				return fs.SkipDir
			}
			// A killed writer's temporary file goes when its run is
			// listed (a resumed run's syncer lists it first), even if
			// nothing is put beside it again.
			if strings.HasPrefix(d.Name(), tempPrefix) && d.Type().IsRegular() {
				removeIfAbandoned(p)
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		rel, err := filepath.Rel(l.root, p)
		if err != nil {
			return err
		}
		key := filepath.ToSlash(rel)
		if !strings.HasPrefix(key, prefix) {
			return nil
		}
		fi, err := d.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil // deleted while listing
		} else if err != nil {
			return err
		}
		out = append(out, Info{Key: key, Size: fi.Size(), ModTime: fi.ModTime()})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("artifacts: list %q: %w", prefix, err)
	}
	slices.SortFunc(out, func(a, b Info) int { return strings.Compare(a.Key, b.Key) })
	return out, nil
}

// Delete implements Store. Directories left empty are removed, up to the root.
func (l *Local) Delete(ctx context.Context, key string) error {
	if err := ValidKey(key); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("artifacts: delete %s: %w", key, err)
	}
	p := l.path(key)
	if fi, err := os.Lstat(p); err == nil && fi.IsDir() {
		return nil // a directory is not an object
	}
	if err := os.Remove(p); err != nil {
		if errors.Is(err, fs.ErrNotExist) || isNotDir(err) {
			return nil
		}
		return fmt.Errorf("artifacts: delete %s: %w", key, err)
	}
	for dir := filepath.Dir(p); dir != l.root && strings.HasPrefix(dir, l.root); dir = filepath.Dir(dir) {
		if os.Remove(dir) != nil { // not empty, or raced with a Put: stop
			break
		}
	}
	return nil
}

// Presign implements Store: it returns the object's file:// URL. The ttl is
// checked but a file URL does not expire.
func (l *Local) Presign(ctx context.Context, key string, ttl time.Duration) (string, error) {
	if err := ValidKey(key); err != nil {
		return "", err
	}
	if err := checkTTL(ttl); err != nil {
		return "", fmt.Errorf("artifacts: presign %s: %w", key, err)
	}
	if _, err := l.stat(ctx, "presign", key); err != nil {
		return "", err
	}
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(l.path(key))}
	return u.String(), nil
}
