package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// The sandbox's /dev is a small tmpfs of its own, read-only once built,
// holding the host's null, zero, full, random and urandom (a user namespace
// cannot make device nodes, so these are binds of the host's), the
// /proc/self/fd links, and /dev/shm as a link to a directory in /tmp, so
// that shared memory counts against Limits.TmpSize like any file in /tmp.
// No pseudo-terminals: with --new-session there is no terminal to have.
var devNodes = []string{"null", "zero", "full", "random", "urandom"}

// shmDir is /dev/shm's target, in the agent's /tmp.
const shmDir = HomeDir + "/.shm"

// devSize bounds the /dev tmpfs, which only holds empty mount points and
// links before it is remounted read-only.
const devSize = 64 << 10

// readOnlyDevDir is where a root launcher keeps read-only binds of the
// host's device nodes, made once per boot and shared by every sandbox:
// bubblewrap can bind a device only as writable as its source (every
// read-only bind it makes is also nodev), and through a writable bind a
// process may change the host node's mode, owner or times.
const readOnlyDevDir = "/run/pairbench/dev"

// devMounts returns bubblewrap's options for /dev, binding the device
// nodes from source (readOnlyDevDir, or /dev itself).
func devMounts(source string) []string {
	a := []string{"--size", fmt.Sprint(devSize), "--perms", "0755", "--tmpfs", "/dev"}
	for _, n := range devNodes {
		a = append(a, "--dev-bind", filepath.Join(source, n), "/dev/"+n)
	}
	a = append(a, "--symlink", "/proc/self/fd", "/dev/fd",
		"--symlink", "/proc/self/fd/0", "/dev/stdin",
		"--symlink", "/proc/self/fd/1", "/dev/stdout",
		"--symlink", "/proc/self/fd/2", "/dev/stderr",
		"--symlink", shmDir, "/dev/shm")
	return a
}

// devSource returns where a sandbox of this launcher binds device nodes
// from, and why not from readOnlyDevDir when it cannot: only root can
// make the read-only binds there.
func devSource() (string, string) {
	if os.Geteuid() != 0 {
		return "/dev", "an unprivileged launcher cannot make read-only binds of the host's device nodes"
	}
	if err := ensureReadOnlyDevs(readOnlyDevDir); err != nil {
		return "/dev", err.Error()
	}
	return readOnlyDevDir, ""
}

// ensureReadOnlyDevs makes dir hold a read-only (and nosuid, noexec) bind
// of each of the host's devNodes, unless it already does. dir and its
// parent must be root's and writable by nobody else.
func ensureReadOnlyDevs(dir string) error {
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Mkdir(d, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			return fmt.Errorf("read-only device nodes: %w", err)
		}
		var st unix.Stat_t
		if err := unix.Lstat(d, &st); err != nil {
			return fmt.Errorf("read-only device nodes: %w", err)
		}
		if st.Mode&unix.S_IFMT != unix.S_IFDIR || st.Uid != 0 || st.Mode&0o022 != 0 {
			return fmt.Errorf("read-only device nodes: %s is not a directory that only root may write", d)
		}
	}
	for _, n := range devNodes {
		if err := ensureReadOnlyDev("/dev/"+n, filepath.Join(dir, n)); err != nil {
			return fmt.Errorf("read-only device nodes: %w", err)
		}
	}
	return nil
}

// ensureReadOnlyDev makes dst a read-only bind of the device node src.
func ensureReadOnlyDev(src, dst string) error {
	var want, got unix.Stat_t
	if err := unix.Stat(src, &want); err != nil {
		return err
	}
	if want.Mode&unix.S_IFMT != unix.S_IFCHR {
		return fmt.Errorf("%s is not a character device", src)
	}
	if unix.Lstat(dst, &got) == nil && got.Mode&unix.S_IFMT == unix.S_IFCHR && got.Rdev == want.Rdev {
		var fs unix.Statfs_t
		if unix.Statfs(dst, &fs) == nil && fs.Flags&unix.ST_RDONLY != 0 {
			return nil // made earlier
		}
		if err := unix.Unmount(dst, unix.MNT_DETACH|unix.UMOUNT_NOFOLLOW); err != nil {
			return fmt.Errorf("%s: %w", dst, err)
		}
	}
	if err := unix.Lstat(dst, &got); err != nil {
		f, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o444)
		if err != nil {
			return err
		}
		f.Close()
	} else if got.Mode&unix.S_IFMT != unix.S_IFREG {
		return fmt.Errorf("%s: in the way, and not a mount point this package made", dst)
	}
	if err := unix.Mount(src, dst, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("bind %s: %w", src, err)
	}
	if err := unix.Mount("", dst, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NOEXEC, ""); err != nil {
		unix.Unmount(dst, unix.MNT_DETACH)
		return fmt.Errorf("make %s read-only: %w", dst, err)
	}
	return nil
}
