package sandbox

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// TestEscapeSetuidInTheWorkspace: whatever the agent writes where the host
// can reach it (a live workspace, the per-agent directory) never carries a
// setuid or setgid bit or is a device: a host user who runs a planted
// binary would otherwise run it as the sandbox's user (under the old root
// launcher, as root). Every way to set the bits is tried: chmod, fchmod,
// fchmodat, fchmodat2, creating the file with them (open, creat, mknod,
// openat2), cp -p and install of the host's setuid binaries, tar. The
// workspace and /tmp are mounted nosuid and nodev besides.
func TestEscapeSetuidInTheWorkspace(t *testing.T) {
	needBwrap(t)
	if _, err := os.Stat("/usr/sbin/setcap"); err != nil {
		t.Fatal("setcap is not installed (scripts/setup.sh installs libcap2-bin)")
	}
	eachLauncher(t, func(t *testing.T) {
		owner := os.Geteuid()
		if owner == 0 {
			owner = testLauncherUID
		}
		ws := ownedDir(t, owner)
		bin := testBinary(t)
		sb := openSandbox(t, Policy{Workspace: ws, ReadOnly: []string{bin}})
		helper := bin + " " + escapeArg
		attempts := []struct{ name, script string }{
			{"chmod u+s", `cp /bin/sh ./a && chmod u+s ./a && test -u ./a`},
			{"chmod g+s", `cp /bin/sh ./b && chmod g+s ./b && test -g ./b`},
			{"chmod 4755 in /tmp", `cp /bin/sh /tmp/c && chmod 4755 /tmp/c && test -u /tmp/c`},
			{"setgid directory", `mkdir ./d && chmod 2777 ./d && test -g ./d`},
			{"chmod(2)", `cp /bin/sh ./e && ` + helper + ` chmod-setuid ./e chmod`},
			{"fchmod(2)", `cp /bin/sh ./f && ` + helper + ` chmod-setuid ./f fchmod`},
			{"fchmodat(2)", `cp /bin/sh ./g && ` + helper + ` chmod-setuid ./g fchmodat`},
			{"fchmodat2(2)", `cp /bin/sh ./h && ` + helper + ` chmod-setuid ./h fchmodat2`},
			{"open with O_CREAT and 04755", helper + ` create-setuid ./i openat`},
			{"creat with 04755", helper + ` create-setuid ./j creat`},
			{"mknod a regular file with 04755", helper + ` create-setuid ./k mknod`},
			{"openat2 with 04755", helper + ` create-setuid ./l openat2`},
			{"cp -p the host's su", `cp -p /usr/bin/su ./su && test -u ./su`},
			{"install -m 4755", `install -m 4755 /bin/sh ./m && test -u ./m`},
			{"tar keeps a setuid bit", `cp /bin/sh /tmp/n && tar -C /tmp --mode=4755 -cf /tmp/n.tar n &&
				mkdir -p ./t && tar -C ./t -xpf /tmp/n.tar && test -u ./t/n`},
			{"a file capability by setxattr", `cp /bin/sh ./o && ` + helper + ` setcap ./o`},
			{"a file capability by setcap(8)", `cp /bin/sh ./p && /usr/sbin/setcap cap_setuid+ep ./p`},
			{"a character device", `mknod ./null c 1 3`},
			{"a block device", `mknod ./sda b 8 0`},
		}
		for _, a := range attempts {
			t.Run(a.name, func(t *testing.T) {
				r := runSh(t, sb, "cd /workspace && "+a.script)
				assert.NotEqual(t, 0, r.code, "the attempt got through:\n%s", r.out)
				assert.NotContains(t, r.out, "ALLOWED")
			})
		}
		// Nothing the agent left, in the workspace or the per-agent
		// directory, is setuid, setgid or a device, as the host sees it.
		for _, root := range []string{ws, sb.Home()} {
			require.NoError(t, filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
				if err != nil {
					return err
				}
				fi, err := d.Info()
				if err != nil {
					return err
				}
				assert.Zero(t, fi.Mode()&(fs.ModeSetuid|fs.ModeSetgid), "%s is %v on the host", p, fi.Mode())
				assert.Zero(t, fi.Mode()&fs.ModeDevice, "%s is a device on the host", p)
				if fi.Mode().IsRegular() {
					_, err := unix.Getxattr(p, "security.capability", make([]byte, 64))
					assert.ErrorIs(t, err, unix.ENODATA, "%s has file capabilities on the host", p)
				}
				return nil
			}))
		}
		// The agent still sets ordinary modes, and the mounts say nosuid,nodev.
		r := runSh(t, sb, `cd /workspace && cp /bin/sh ./ok && chmod 750 ./ok && stat -c %a ./ok &&
			grep -E ' /(workspace|tmp) ' /proc/self/mountinfo`)
		require.Equal(t, 0, r.code, r.out)
		lines := strings.Split(strings.TrimSpace(r.out), "\n")
		require.GreaterOrEqual(t, len(lines), 3, r.out)
		assert.Equal(t, "750", lines[0])
		for _, l := range lines[1:] {
			opts := strings.Fields(l)[5]
			assert.Contains(t, opts, "nosuid", l)
			assert.Contains(t, opts, "nodev", l)
		}
	})
}
