// Package heldir makes temporary directories that their creator holds, with
// an exclusive flock on the directory itself, for as long as it uses them.
// The kernel drops the lock when the holder dies, however it dies, so after
// a crash the next run can tell an abandoned directory from a live one and
// remove it with Clean.
package heldir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Make creates a fresh directory under parent (os.MkdirTemp's pattern rules)
// and locks it. The directory is held until the returned file is closed.
//
// It is held from the first moment it has its name: Make creates it under a
// hidden name, locks it, and only then renames it, so a directory matching
// the pattern that nobody holds is always abandoned, however young.
func Make(parent, pattern string) (dir string, hold *os.File, err error) {
	tmp, err := os.MkdirTemp(parent, hiddenPrefix+pattern)
	if err != nil {
		return "", nil, err
	}
	hold, err = lock(tmp, unix.LOCK_EX)
	if err != nil {
		os.RemoveAll(tmp)
		return "", nil, err
	}
	dir = filepath.Join(filepath.Dir(tmp), strings.TrimPrefix(filepath.Base(tmp), hiddenPrefix))
	if err := os.Rename(tmp, dir); err != nil {
		hold.Close()
		os.RemoveAll(tmp)
		return "", nil, err
	}
	return dir, hold, nil
}

// hiddenPrefix names a directory Make is still making.
const hiddenPrefix = ".making-"

func lock(dir string, how int) (*os.File, error) {
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

// Clean removes the directories under root matching any of patterns
// (filepath.Glob) that nobody holds, with remove (os.RemoveAll when nil),
// whatever their age: Make holds a directory from its first moment under
// its name. A hidden directory Make was still making is removed only when
// unheld and changed before cutoff (pass a few seconds in the past): its
// creator may be about to lock it. It returns the directories removed;
// failures are joined in the error and the rest are still cleaned.
func Clean(root string, cutoff time.Time, remove func(string) error, patterns ...string) ([]string, error) {
	if remove == nil {
		remove = os.RemoveAll
	}
	var removed []string
	var errs []error
	for _, pat := range patterns {
		dirs, err := filepath.Glob(filepath.Join(root, pat))
		if err != nil {
			return removed, err
		}
		making, err := filepath.Glob(filepath.Join(root, hiddenPrefix+pat))
		if err != nil {
			return removed, err
		}
		for _, dir := range append(dirs, making...) {
			until := time.Now()
			if strings.HasPrefix(filepath.Base(dir), hiddenPrefix) {
				until = cutoff
			}
			ok, err := removeIfStale(dir, until, remove)
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
func removeIfStale(dir string, cutoff time.Time, remove func(string) error) (bool, error) {
	fi, err := os.Lstat(dir)
	if err != nil || !fi.IsDir() || fi.ModTime().After(cutoff) {
		return false, nil
	}
	f, err := lock(dir, unix.LOCK_EX|unix.LOCK_NB)
	if errors.Is(err, unix.EWOULDBLOCK) || errors.Is(err, os.ErrNotExist) || errors.Is(err, os.ErrPermission) {
		return false, nil // in use, gone meanwhile, or another user's
	}
	if err != nil {
		return false, fmt.Errorf("lock %s: %w", dir, err)
	}
	defer f.Close()
	if err := remove(dir); err != nil {
		return false, fmt.Errorf("remove %s: %w", dir, err)
	}
	return true, nil
}
