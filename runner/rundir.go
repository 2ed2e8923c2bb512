package runner

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"

	"github.com/pairbench/pairbench"
)

// ErrLocked is returned when another runner holds the run's lock.
var ErrLocked = errors.New("another runner holds this run")

// Lock is an exclusive hold on a run directory: one runner per run id.
type Lock struct{ f *os.File }

// LockRun takes the run directory's lock without waiting. It fails with
// ErrLocked while another process holds it; the lock ends with Unlock or
// with the process, however it dies.
func LockRun(dir string) (*Lock, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create run dir: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open run lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%s: %w", dir, ErrLocked)
		}
		return nil, fmt.Errorf("lock run: %w", err)
	}
	return &Lock{f: f}, nil
}

// Unlock releases the lock.
func (l *Lock) Unlock() error { return l.f.Close() }

// RowLog appends rows to a rows.jsonl file, one fsynced line per row, so a
// killed runner loses at most the row being written (which readers then skip
// as a partial last line).
type RowLog struct {
	mu   sync.Mutex
	f    *os.File
	path string
}

// OpenRowLog opens path for appending, creating it if needed. A partial last
// line left by a killed writer is cut off first, so the next row starts on a
// line of its own.
func OpenRowLog(path string) (*RowLog, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("create rows dir: %w", err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open rows: %w", err)
	}
	if err := truncatePartial(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("repair %s: %w", path, err)
	}
	return &RowLog{f: f, path: path}, nil
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

// Append writes row as one line and syncs it to disk before returning.
func (l *RowLog) Append(row pairbench.Row) error {
	b, err := pairbench.AppendRow(nil, row)
	if err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, err := l.f.Write(b); err != nil {
		return fmt.Errorf("append row: %w", err)
	}
	if err := l.f.Sync(); err != nil {
		return fmt.Errorf("sync rows: %w", err)
	}
	return nil
}

// Path returns the file's path.
func (l *RowLog) Path() string { return l.path }

// Close closes the file.
func (l *RowLog) Close() error { return l.f.Close() }
