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

// DialUnix connects to the unix socket at path, however long the path:
// one longer than a socket address holds is reached through a descriptor
// of its directory (/proc/self/fd/N/NAME), so a deep --temp-dir works.
func DialUnix(ctx context.Context, path string) (net.Conn, error) {
	var c net.Conn
	err := viaShortPath(path, func(short string) error {
		var d net.Dialer
		var err error
		c, err = d.DialContext(ctx, "unix", short)
		return err
	})
	return c, err
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
