package sandboxinit

import (
	"os"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// collectGarbage runs a collection and waits until the finalizers it
// queued have run: a finalizer set after the collection began runs after
// those queued before it, on the one goroutine that runs them all.
func collectGarbage(t *testing.T) {
	t.Helper()
	for range 2 {
		runtime.GC()
	}
	done := make(chan struct{})
	sentinel := new([16]byte)
	runtime.SetFinalizer(sentinel, func(*[16]byte) { close(done) })
	sentinel = nil
	patience := time.After(time.Minute)
	for {
		runtime.GC()
		select {
		case <-done:
			return
		case <-time.After(10 * time.Millisecond):
		case <-patience:
			t.Fatal("finalizers did not run within a minute")
		}
	}
}

// The command's -fd descriptors must still be open when the init forks it,
// however the garbage collector runs in between: the init once wrapped them
// in *os.File values that nothing referred to during the fork, whose
// finalizers closed them, and the command failed to start with EBADF.
func TestChildFilesSurviveACollection(t *testing.T) {
	r, w, err := os.Pipe()
	require.NoError(t, err)
	defer r.Close()
	defer w.Close()
	fd, err := syscall.Dup(int(w.Fd()))
	require.NoError(t, err)
	require.GreaterOrEqual(t, fd, 3)

	extra := childFiles(fdFlag{fd})
	collectGarbage(t)

	_, err = unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
	require.NoError(t, err, "descriptor %d was closed by a collection", fd)
	pid, err := startChild([]string{"/bin/sh", "-c", "echo ok >&3"}, extra)
	require.NoError(t, err)
	require.Zero(t, reapUntil(pid, pid))
	syscall.Close(fd)
	w.Close()
	buf := make([]byte, 8)
	n, _ := r.Read(buf)
	require.Equal(t, "ok\n", string(buf[:n]))
}
