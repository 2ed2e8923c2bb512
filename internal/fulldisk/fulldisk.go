// Package fulldisk gives tests a small filesystem of their own to fill: a
// tmpfs of a given size mounted on a temporary directory.
package fulldisk

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// Mount mounts a tmpfs of size bytes on a new temporary directory and
// returns it; it is unmounted when the test ends. Mounting needs root: the
// test is skipped without it (CI runs the suite as root).
func Mount(t testing.TB, size int64) string {
	t.Helper()
	dir := t.TempDir()
	MountAt(t, dir, size)
	return dir
}

// MountAt mounts a tmpfs of size bytes on dir, an existing directory, as
// Mount does.
func MountAt(t testing.TB, dir string, size int64) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs of a given size needs root (CI runs the suite as root)")
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, fmt.Sprintf("size=%d", size)); err != nil {
		t.Fatalf("mount a tmpfs on %s: %v", dir, err)
	}
	t.Cleanup(func() { _ = unix.Unmount(dir, unix.MNT_DETACH) })
}

// Fill writes the file dir/filler until its filesystem is full and
// returns its path; removing it gives the space back.
func Fill(t testing.TB, dir string) string {
	t.Helper()
	p := filepath.Join(dir, "filler")
	f, err := os.Create(p)
	if err != nil {
		t.Fatalf("fill %s: %v", dir, err)
	}
	defer f.Close()
	chunk := make([]byte, 64<<10)
	for {
		if _, err := f.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("fill %s: %v", dir, err)
			}
			return p
		}
	}
}

// Temps returns the files under dir whose names say they are temporary:
// dot-names (the viewer's and the run directory's temporary files, the
// local store's .tmp-*) and names ending in .tmp.
func Temps(t testing.TB, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		name := d.Name()
		if filepath.Ext(name) == ".tmp" || (len(name) > 0 && name[0] == '.') {
			out = append(out, p)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("list %s: %v", dir, err)
	}
	return out
}
