package sandbox

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// maxSocketPath is the longest path a unix socket address holds (sun_path
// is 108 bytes with its terminating NUL).
const maxSocketPath = 107

// DialUnix connects to the unix socket at path, however long the path,
// and only to a socket: the last element of path is never followed as a
// symbolic link. Sockets a sandbox exposes (Cmd.Expose) sit in its own
// /tmp, which it may rewrite: a link there would make the launcher, with
// its own identity, connect wherever the link names (another trial's
// egress, a root-only service) and relay that to another sandbox. The
// socket's inode is pinned with an O_PATH descriptor, checked, and dialled
// through /proc/self/fd/N, so nothing can swap it in between.
func DialUnix(ctx context.Context, path string) (net.Conn, error) {
	dir, name := filepath.Split(path)
	dirfd, err := unix.Open(filepath.Clean(dir), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("socket directory of %s: %w", path, err)
	}
	defer unix.Close(dirfd)
	fd, err := unix.Openat(dirfd, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &net.OpError{Op: "dial", Net: "unix", Err: fmt.Errorf("%s: %w", path, err)}
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, fmt.Errorf("socket %s: %w", path, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFSOCK {
		return nil, &net.OpError{Op: "dial", Net: "unix", Err: fmt.Errorf("%s is not a socket (a link or another file in its place)", path)}
	}
	var d net.Dialer
	return d.DialContext(ctx, "unix", "/proc/self/fd/"+strconv.Itoa(fd))
}

// listenUnixPath listens on the unix socket at path, however long. Closing
// the listener leaves the socket file.
func listenUnixPath(path string) (net.Listener, error) {
	var l net.Listener
	err := viaShortPath(path, func(short string) error {
		var err error
		l, err = net.Listen("unix", short)
		return err
	})
	if ul, ok := l.(*net.UnixListener); ok {
		// Close cannot unlink by the short name, which is gone by then;
		// the caller removes the socket's directory.
		ul.SetUnlinkOnClose(false)
	}
	return l, err
}

// viaShortPath calls fn with path, or, when path is too long for a socket
// address, with a /proc/self/fd path to the same file.
func viaShortPath(path string, fn func(string) error) error {
	if len(path) <= maxSocketPath {
		return fn(path)
	}
	fd, err := unix.Open(filepath.Dir(path), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("socket directory of %s: %w", path, err)
	}
	defer unix.Close(fd)
	short := "/proc/self/fd/" + strconv.Itoa(fd) + "/" + filepath.Base(path)
	if len(short) > maxSocketPath {
		return fmt.Errorf("socket %s: its name is too long", path)
	}
	return fn(short)
}
