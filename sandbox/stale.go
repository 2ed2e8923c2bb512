package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// Host directories created per agent. A process killed with SIGKILL cannot
// remove them, so each is held with an exclusive flock on the directory
// itself for as long as it is in use; the kernel drops the lock when the
// holder dies, however it dies. CleanStale removes the ones nobody holds.
const (
	agentDirPrefix  = "pairbench-sandbox-"
	egressDirPrefix = "pairbench-egress-"
)

// mkdirHeld creates a fresh directory under parent (os.MkdirTemp's pattern
// rules) and locks it. The directory is in use until the returned file is
// closed.
func mkdirHeld(parent, pattern string) (string, *os.File, error) {
	dir, err := os.MkdirTemp(parent, pattern)
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

// lockDir opens dir and flocks it with how (LOCK_EX, maybe | LOCK_NB).
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

// CleanStale removes the per-agent and egress socket directories under root
// (os.TempDir() when empty) that no live process holds: those left behind
// by a runner that was killed. A directory last changed after cutoff is left
// alone even when unheld, because its creator may not have locked it yet;
// pass a cutoff a few seconds in the past. It returns the directories it
// removed; directories it could not remove are reported in the error and
// the rest are still cleaned.
func CleanStale(root string, cutoff time.Time) ([]string, error) {
	return cleanStale(orDefault(root, os.TempDir()), cutoff, agentDirPrefix+"*", egressDirPrefix+"*")
}

func cleanStale(root string, cutoff time.Time, patterns ...string) ([]string, error) {
	var removed []string
	var errs []error
	for _, pat := range patterns {
		dirs, err := filepath.Glob(filepath.Join(root, pat))
		if err != nil {
			return removed, err
		}
		for _, dir := range dirs {
			ok, err := removeIfStale(dir, cutoff)
			if err != nil {
				errs = append(errs, err)
			}
			if ok {
				removed = append(removed, dir)
			}
		}
	}
	return removed, errors.Join(errs...)
}

// removeIfStale removes dir when it is an unheld directory older than
// cutoff, holding its lock meanwhile so no other cleaner races it.
func removeIfStale(dir string, cutoff time.Time) (bool, error) {
	fi, err := os.Lstat(dir)
	if err != nil || !fi.IsDir() || fi.ModTime().After(cutoff) {
		return false, nil
	}
	f, err := lockDir(dir, unix.LOCK_EX|unix.LOCK_NB)
	if errors.Is(err, unix.EWOULDBLOCK) || errors.Is(err, os.ErrNotExist) || errors.Is(err, os.ErrPermission) {
		return false, nil // in use, gone meanwhile, or another user's
	}
	if err != nil {
		return false, fmt.Errorf("sandbox: lock %s: %w", dir, err)
	}
	defer f.Close()
	if err := removeAll(dir); err != nil {
		return false, err
	}
	return true, nil
}
