package sandbox

import (
	"bufio"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// TestEscapeInotifyExhaustsTheLaunchersUser: one sandbox opens as many
// inotify instances as the kernel gives it and holds them. The kernel
// counts them per host user (fs.inotify.max_user_instances, 128 by
// default): an unprivileged launcher's sandboxes all run as the launcher's
// user, so on a4d171d the launcher itself, and every other sandbox, then
// failed with EMFILE. Now each sandbox of an unprivileged launcher has a
// share of its own (sharedUserLimits); a root launcher's run as users of
// their own.
func TestEscapeInotifyExhaustsTheLaunchersUser(t *testing.T) {
	needBwrap(t)
	eachLauncher(t, func(t *testing.T) {
		hog := openSandbox(t, Policy{ReadOnly: []string{testBinary(t)}})
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		stdin, release := io.Pipe()
		defer release.Close()
		var out strings.Builder
		c := hog.Command(ctx, testBinary(t), escapeArg, "inotify-hold", "100000")
		c.Stdin = stdin
		r, w := io.Pipe()
		c.Stdout, c.Stderr = w, &out
		require.NoError(t, c.Start())
		line, err := bufio.NewReader(r).ReadString('\n')
		require.NoError(t, err, "the hog said nothing: %s", out.String())
		t.Logf("the hog holds: %s", strings.TrimSpace(line))

		fd, err := unix.InotifyInit1(unix.IN_CLOEXEC)
		if assert.NoError(t, err, "the launcher cannot watch a file") {
			unix.Close(fd)
		}
		next := openSandbox(t, Policy{ReadOnly: []string{testBinary(t)}})
		res := runScript(t, next, "/bin/sh", testBinary(t)+" "+escapeArg+" inotify-hold 4 </dev/null", nil)
		assert.Contains(t, res.out, "held 4", "another sandbox cannot watch a file")
		release.Close()
		w.Close()
		c.Wait()
	})
}
