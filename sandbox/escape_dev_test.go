package sandbox

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// TestEscapeDev: the sandbox's /dev is read-only (no files of the agent's
// in a tmpfs sized by RAM), /dev/shm is part of /tmp and counts against
// Limits.TmpSize, and the host's device nodes bound in are never changed
// from inside: under a root launcher they are read-only binds; under an
// unprivileged one the agent is not their owner.
func TestEscapeDev(t *testing.T) {
	needBwrap(t)
	eachLauncher(t, func(t *testing.T) {
		nodes := []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty"}
		before := map[string]unix.Stat_t{}
		for _, n := range nodes {
			var st unix.Stat_t
			require.NoError(t, unix.Stat(n, &st))
			before[n] = st
		}
		t.Cleanup(func() {
			// Should an attempt get through, the host's nodes are put back.
			for n, b := range before {
				var st unix.Stat_t
				if unix.Stat(n, &st) == nil && (st.Mode != b.Mode || st.Uid != b.Uid || st.Gid != b.Gid) && os.Geteuid() == 0 {
					unix.Chmod(n, b.Mode&0o7777)
					unix.Chown(n, int(b.Uid), int(b.Gid))
				}
			}
		})
		sb := openSandbox(t, Policy{Limits: Limits{TmpSize: 8 << 20}})
		attempts := []struct{ name, script string }{
			{"create a file in /dev", `echo x > /dev/evil`},
			{"create a directory in /dev", `mkdir /dev/d`},
			{"replace /dev/null", `rm -f /dev/null && echo x > /dev/null && test -f /dev/null`},
			{"fill /dev/shm past the /tmp limit", `head -c 32M /dev/zero > /dev/shm/big`},
			{"fill /tmp and /dev/shm together past the limit", `head -c 5M /dev/zero > /tmp/a && head -c 5M /dev/zero > /dev/shm/b`},
			{"chmod a host device node", `chmod 777 /dev/null /dev/zero /dev/full /dev/random /dev/urandom`},
			{"chown a host device node", `chown 1000 /dev/null || chown 1000:1000 /dev/zero`},
			{"a terminal", `test -e /dev/tty || test -e /dev/ptmx || test -e /dev/pts/ptmx`},
		}
		for _, a := range attempts {
			t.Run(a.name, func(t *testing.T) {
				r := runSh(t, sb, a.script)
				assert.NotEqual(t, 0, r.code, "the attempt got through:\n%s", r.out)
			})
		}
		// The devices work, /dev/shm is /tmp's file system, and the node
		// binds are read-only under a root launcher.
		r := runSh(t, sb, `echo x > /dev/null; head -c 4 /dev/urandom | wc -c; echo shm > /dev/shm/ok && cat /dev/shm/ok
			test "$(stat -c %d /dev/shm/)" = "$(stat -c %d /tmp)" && echo same-fs
			touch -d 2000-01-01 /dev/null /dev/zero 2>/dev/null
			grep -E ' /dev(/null)? ' /proc/self/mountinfo`)
		require.Equal(t, 0, r.code, r.out)
		lines := strings.Split(strings.TrimSpace(r.out), "\n")
		require.GreaterOrEqual(t, len(lines), 5, r.out)
		assert.Equal(t, []string{"4", "shm", "same-fs"}, lines[:3])
		for _, l := range lines[3:] {
			f := strings.Fields(l)
			if f[4] == "/dev" || os.Geteuid() == 0 {
				assert.True(t, strings.HasPrefix(f[5], "ro,"), "read-only: %s", l)
			}
		}
		for _, n := range nodes {
			var st unix.Stat_t
			require.NoError(t, unix.Stat(n, &st))
			b := before[n]
			assert.Equal(t, [3]uint32{b.Mode, b.Uid, b.Gid}, [3]uint32{st.Mode, st.Uid, st.Gid}, "%s's mode or owner changed", n)
			if os.Geteuid() == 0 {
				assert.Equal(t, b.Mtim, st.Mtim, "%s's times changed", n)
			} else {
				t.Logf("%s: an unprivileged launcher binds it writable (it cannot make a read-only host mount); the agent, not its owner, may change only its times", n)
			}
		}
	})
}
