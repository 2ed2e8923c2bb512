package local

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// profilePrefix names the profile directories this package creates. Each is
// held with an exclusive flock on the directory itself while its browser
// runs; the kernel drops the lock when pairbench dies, however it dies, so
// CleanStale can tell a killed runner's leftovers from a live browser's.
const profilePrefix = "pairbench-chromium-"

// mkdirHeld creates a fresh profile directory under parent and locks it
// until the returned file is closed.
func mkdirHeld(parent string) (string, *os.File, error) {
	dir, err := os.MkdirTemp(parent, profilePrefix)
	if err != nil {
		return "", nil, err
	}
	f, err := lockDir(dir, unix.LOCK_EX)
	if err != nil {
		os.RemoveAll(dir)
		return "", nil, err
	}
	return dir, f, nil
}

func lockDir(dir string, how int) (*os.File, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), how); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// CleanStale removes the Chromium profile directories under root
// (os.TempDir() when empty) that no live pairbench holds: those of runners
// that were killed. (Their browsers died with them: see startProcess.) A
// directory last changed after cutoff is left alone, since its creator may
// not have locked it yet; pass a cutoff a few seconds in the past. It
// returns the directories removed; failures are joined in the error and the
// rest are still cleaned.
func CleanStale(root string, cutoff time.Time) ([]string, error) {
	if root == "" {
		root = os.TempDir()
	}
	dirs, err := filepath.Glob(filepath.Join(root, profilePrefix+"*"))
	if err != nil {
		return nil, err
	}
	var removed []string
	var errs []error
	for _, dir := range dirs {
		fi, err := os.Lstat(dir)
		if err != nil || !fi.IsDir() || fi.ModTime().After(cutoff) {
			continue
		}
		f, err := lockDir(dir, unix.LOCK_EX|unix.LOCK_NB)
		if errors.Is(err, unix.EWOULDBLOCK) || errors.Is(err, os.ErrNotExist) || errors.Is(err, os.ErrPermission) {
			continue // in use, gone meanwhile, or another user's
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("lock %s: %w", dir, err))
			continue
		}
		if err := os.RemoveAll(dir); err != nil {
			errs = append(errs, fmt.Errorf("remove stale profile: %w", err))
		} else {
			removed = append(removed, dir)
		}
		f.Close()
	}
	return removed, errors.Join(errs...)
}
