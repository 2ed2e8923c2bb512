package sandbox

import (
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// The confinement half of the adversarial suite: real bubblewrap, the
// launcher's full policy, and attempts to reach the host through the file
// system, /proc, capabilities and namespaces. Every attempt is a script
// that exits 0 only if it got through; each must fail, and no planted
// canary may appear in anything it printed. Syscalls a shell cannot make
// go through the test binary itself (escapeArg), mounted read-only.

// escapeFixture is the host side of the suite: canaries planted where the
// sandbox must not reach, and the sandbox under attack.
type escapeFixture struct {
	sb        *Sandbox
	helper    string            // the test binary, as seen inside
	canaries  map[string]string // what: marker
	vars      map[string]string // placeholders in scripts: name -> value
	hostSleep *exec.Cmd         // a host process to attack
}

func newEscapeFixture(t *testing.T) *escapeFixture {
	needBwrap(t)
	f := &escapeFixture{canaries: map[string]string{}, vars: map[string]string{}}
	plant := func(what string) string {
		m := newMarker(t, what)
		f.canaries[what] = m
		return m
	}

	// A file elsewhere in the host's /tmp.
	tmpFile, err := os.CreateTemp("/tmp", "pairbench-canary-")
	require.NoError(t, err)
	t.Cleanup(func() { os.Remove(tmpFile.Name()) })
	_, err = tmpFile.WriteString(plant("tmp"))
	require.NoError(t, err)
	require.NoError(t, tmpFile.Close())
	f.vars["HOSTTMP"] = tmpFile.Name()

	// Another trial's per-agent directory.
	other := openSandbox(t, Policy{})
	require.NoError(t, os.WriteFile(filepath.Join(other.Home(), "transcript.jsonl"), []byte(plant("othertrial")), 0o600))
	f.vars["OTHERHOME"] = other.Home()

	// The launcher's own environment (bubblewrap's must not inherit it).
	t.Setenv("PAIRBENCH_ESCAPE_HOST_SECRET", plant("hostenv"))

	// The user keyring of the launcher's user.
	keyDesc := "pairbench-escape-" + strconv.Itoa(os.Getpid())
	keyID, keyErr := unix.AddKey("user", keyDesc, []byte(plant("keyring")), unix.KEY_SPEC_USER_KEYRING)
	if keyErr == nil {
		t.Cleanup(func() { unix.KeyctlInt(unix.KEYCTL_INVALIDATE, keyID, 0, 0, 0) })
	}
	f.vars["KEYDESC"] = keyDesc

	// The checkout this test runs in, and the host home.
	wd, err := os.Getwd()
	require.NoError(t, err)
	f.vars["CHECKOUT"] = filepath.Dir(wd)
	home, err := os.UserHomeDir()
	require.NoError(t, err)
	f.vars["HOSTHOME"] = home

	// A workspace holding a link out to the host file.
	ws := ownedDir(t, testLauncherUID) // a root launcher refuses a live workspace that is root's
	require.NoError(t, os.Symlink(tmpFile.Name(), filepath.Join(ws, "leak")))
	require.NoError(t, os.Symlink("../../../../../../.."+tmpFile.Name(), filepath.Join(ws, "leak-relative")))

	// A program installed outside /usr.
	prog := sharedDir(t)
	require.NoError(t, os.WriteFile(filepath.Join(prog, "cli.js"), []byte("// agent\n"), 0o644))
	f.vars["PROGDIR"] = prog

	exe := testBinary(t)
	f.helper = exe
	f.vars["HELPER"] = exe + " " + escapeArg

	// A host process.
	f.hostSleep = exec.Command("/bin/sleep", "300")
	require.NoError(t, f.hostSleep.Start())
	t.Cleanup(func() { f.hostSleep.Process.Kill(); f.hostSleep.Wait() })
	f.vars["HOSTPID"] = strconv.Itoa(f.hostSleep.Process.Pid)
	f.vars["LAUNCHERPID"] = strconv.Itoa(os.Getpid())

	f.sb = openSandbox(t, Policy{
		Workspace: ws,
		ReadOnly:  []string{exe, prog},
		Env:       map[string]string{"AGENT_TOKEN": plant("agentenv")},
	})
	// The host-side canaries, for a search from inside.
	var list []string
	for what, m := range f.canaries {
		if what != "agentenv" {
			list = append(list, m)
		}
	}
	require.NoError(t, os.WriteFile(filepath.Join(f.sb.Home(), ".canaries"), []byte(strings.Join(list, "\n")+"\n"), 0o600))
	return f
}

// expand replaces $NAME placeholders in script with the fixture's values,
// longest names first ($HELPER_PATH before $HELPER).
func (f *escapeFixture) expand(script string) string {
	names := slices.SortedFunc(maps.Keys(f.vars), func(a, b string) int { return len(b) - len(a) })
	for _, k := range names {
		script = strings.ReplaceAll(script, "$"+k, f.vars[k])
	}
	return script
}

// assertNoCanary fails when out holds any planted canary except allowed.
func (f *escapeFixture) assertNoCanary(t *testing.T, out string, allowed ...string) {
	t.Helper()
	for what, m := range f.canaries {
		if !slices.Contains(allowed, what) {
			assert.NotContains(t, out, m, "canary %q leaked", what)
		}
	}
}

func TestEscapeFilesystemProcCapabilitiesNamespaces(t *testing.T) {
	eachLauncher(t, func(t *testing.T) {
		f := newEscapeFixture(t)

		// Positive control: the sandbox runs scripts, the helper works inside
		// and the agent's own variable is there. Without this every refusal
		// below could be a broken sandbox.
		r := runSh(t, f.sb, f.expand(`echo "$AGENT_TOKEN" && $HELPER sethostname; echo helper-exit=$?; cat $PROGDIR/cli.js`))
		require.Contains(t, r.out, f.canaries["agentenv"], r.out)
		require.Contains(t, r.out, "helper-exit=1", "the helper ran (and was refused)")
		require.Contains(t, r.out, "// agent", r.out)

		attempts := []struct {
			name   string
			script string
			after  func(t *testing.T) // host-side check that nothing changed
		}{
			// Host files.
			{name: "read /etc/shadow", script: `cat /etc/shadow`},
			{name: "read /etc files outside the DNS/TLS list", script: `cat /etc/hostname /etc/machine-id /etc/sudoers`},
			{name: "host accounts in /etc/passwd", script: `grep -v '^agent:' /etc/passwd`},
			{name: "read the host home", script: `ls -A $HOSTHOME /root /home/* 2>&1 | grep -v 'No such file'`},
			{name: "read the checkout", script: `cat $CHECKOUT/go.mod $CHECKOUT/sandbox/sandbox.go`},
			{name: "read another file in the host /tmp", script: `cat $HOSTTMP`},
			{name: "list the host /tmp", script: `ls -A /tmp | grep pairbench-canary`},
			{name: "read another trial's directory", script: `cat $OTHERHOME/transcript.jsonl`},
			{name: "search the visible tree for canaries", script: `grep -rslF -f $HOME/.canaries /workspace /etc /dev /run /.pairbench /tmp/* 2>/dev/null | grep .`},
			{name: "follow an absolute symlink out of the workspace", script: `cat /workspace/leak`},
			{name: "follow a relative ../ symlink out of the workspace", script: `cat /workspace/leak-relative`},
			{name: "hard-link a host file into reach", script: `ln $HOSTTMP /tmp/stolen && cat /tmp/stolen`},

			// Writes through read-only mounts.
			{name: "write into /usr", script: `echo pwned > /usr/bin/pairbench-pwned`,
				after: func(t *testing.T) { assert.NoFileExists(t, "/usr/bin/pairbench-pwned") }},
			{name: "append to /etc/resolv.conf", script: `echo 'nameserver 6.6.6.6' >> /etc/resolv.conf`},
			{name: "plant /etc/ld.so.preload for later programs", script: `echo /tmp/evil.so > /etc/ld.so.preload`},
			{name: "create files in the sandbox's root", script: `mkdir /run && touch /run/x || touch /pwned`},
			{name: "read TLS private keys", script: `ls -A /etc/ssl/private | grep . || cat /etc/ssl/private/*`},
			{name: "write into a read-only program directory", script: `echo pwned > $PROGDIR/cli.js`,
				after: func(t *testing.T) {
					b, err := os.ReadFile(filepath.Join(f.vars["PROGDIR"], "cli.js"))
					require.NoError(t, err)
					assert.Equal(t, "// agent\n", string(b))
				}},
			{name: "replace the init binary", script: `cp /bin/true $HELPER_PATH`},
			{name: "remount /usr read-write (syscall)", script: `$HELPER remount-rw /usr && echo pwned > /usr/pairbench-pwned`,
				after: func(t *testing.T) { assert.NoFileExists(t, "/usr/pairbench-pwned") }},
			{name: "mount -o remount,rw,bind /usr", script: `mount -o remount,rw,bind /usr && touch /usr/pairbench-pwned2`,
				after: func(t *testing.T) { assert.NoFileExists(t, "/usr/pairbench-pwned2") }},
			{name: "mount a tmpfs over /etc", script: `$HELPER mount-tmpfs /etc`},
			{name: "mknod a block device (syscall)", script: `$HELPER mknod /tmp/sda && head -c 512 /tmp/sda | od | head -1`},
			{name: "mknod(1) a disk node", script: `mknod /tmp/disk b 8 0`},

			// /proc.
			{name: "PID 1's environment holds the host's variables", script: `tr '\0' '\n' < /proc/1/environ | grep .`},
			{name: "any visible process's environment holds a host variable", script: `cat /proc/[0-9]*/environ | tr '\0' '\n' | grep PAIRBENCH_ESCAPE`},
			{name: "PID 1's command line holds an environment value", script: `tr '\0' ' ' < /proc/1/cmdline | grep -e '--set[e]nv' -e "$AGENT_TOKEN"`},
			{name: "read bubblewrap's argument file through /proc/1/fd", script: `for fd in /proc/1/fd/*; do timeout 1 cat "$fd" 2>/dev/null; done | tr '\0' ' ' | grep -e '--set[e]nv' -e "$AGENT_TOKEN"`},
			{name: "see host processes", script: `ls /proc | grep -x -e $HOSTPID -e $LAUNCHERPID`},
			{name: "sysrq trigger", script: `echo h > /proc/sysrq-trigger`},
			// As root, the sandbox user is uid 0 to the host's permission
			// checks: /proc/sys must be read-only. (Only a harmless tunable is
			// tried; test -w asks without writing.)
			{name: "write a kernel tunable", script: `test -w /proc/sys/kernel/panic || echo 1 > /proc/sys/vm/drop_caches`},
			{name: "write any writable /proc file beyond the sandbox", script: `find /proc -maxdepth 3 -writable -not -path '/proc/[0-9]*' -not -path '/proc/self*' -not -path '/proc/thread-self*' 2>/dev/null | grep .`},
			{name: "reach /sys", script: `ls /sys/kernel /sys/fs/cgroup 2>&1 | grep -v 'No such' | grep . || echo 1 > /sys/kernel/uevent_helper`},

			// Devices.
			{name: "see the host's disks and memory devices", script: `ls /dev/vda /dev/sda /dev/nvme0n1 /dev/mem /dev/kmem /dev/port /dev/kmsg 2>/dev/null | grep .`},
			{name: "read the kernel log", script: `dmesg | head -1 | grep .`},

			// Processes, capabilities and namespaces.
			{name: "ptrace the launcher", script: `$HELPER ptrace $LAUNCHERPID`},
			{name: "ptrace a host process", script: `$HELPER ptrace $HOSTPID`},
			{name: "ptrace the sandbox's PID 1 (bubblewrap)", script: `$HELPER ptrace 1`},
			{name: "read PID 1's memory with process_vm_readv", script: `$HELPER vm-read 1`},
			{name: "set up an io_uring", script: `$HELPER io-uring`},
			{name: "kill a host process (syscall)", script: `$HELPER kill $HOSTPID`},
			{name: "kill(1) a host process", script: `kill -9 $HOSTPID`},
			{name: "become root with setuid(0)", script: `$HELPER setuid0`},
			{name: "setuid-root binary", script: `su -c 'cat /etc/shadow' root < /dev/null`},
			{name: "raise capabilities with capset", script: `$HELPER capset-all`},
			{name: "hold any capability", script: `grep -E '^Cap(Inh|Prm|Eff|Bnd|Amb):' /proc/self/status | grep -v '0000000000000000$'`},
			{name: "new user namespace to regain capabilities (syscall)", script: `$HELPER unshare-user`},
			{name: "unshare(1) -Ur to become root", script: `unshare -Ur cat /proc/self/status`},
			{name: "new mount namespace", script: `$HELPER unshare-mount`},
			{name: "chroot (syscall)", script: `$HELPER chroot /tmp`},
			{name: "chroot(1)", script: `chroot / /bin/true`},
			{name: "pivot_root", script: `$HELPER pivot-root /tmp`},
			{name: "set the hostname", script: `$HELPER sethostname`},
			{name: "read the launcher user's keyring", script: `$HELPER keyctl-read $KEYDESC`},
			{name: "nsenter the host's namespaces through a host PID", script: `nsenter -t $HOSTPID -a cat /etc/shadow`},
		}
		f.vars["HELPER_PATH"] = f.helper
		for _, a := range attempts {
			t.Run(a.name, func(t *testing.T) {
				r := runSh(t, f.sb, f.expand(a.script))
				assert.NotEqual(t, 0, r.code, "the attempt got through:\n%s", r.out)
				assert.NotContains(t, r.out, "ALLOWED")
				f.assertNoCanary(t, r.out)
				if a.after != nil {
					a.after(t)
				}
			})
		}
		// The attacked host process survived.
		assert.NoError(t, f.hostSleep.Process.Signal(unix.Signal(0)), "host process still alive")
	})
}

func TestEscapeHiddenWorktreeFiles(t *testing.T) {
	needBwrap(t)
	eachLauncher(t, func(t *testing.T) {
		wt := t.TempDir()
		envSecret, gitSecret, sshSecret, lateSecret := newMarker(t, "dotenv"), newMarker(t, "gitconfig"), newMarker(t, "ssh"), newMarker(t, "late")
		outside := newMarker(t, "outside")
		outsideFile := filepath.Join(t.TempDir(), "outside.txt")
		require.NoError(t, os.WriteFile(outsideFile, []byte(outside), 0o600))
		require.NoError(t, os.WriteFile(filepath.Join(wt, ".env"), []byte(envSecret), 0o600))
		require.NoError(t, os.MkdirAll(filepath.Join(wt, ".git"), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(wt, ".git", "config"), []byte(gitSecret), 0o600))
		require.NoError(t, os.WriteFile(filepath.Join(wt, ".git", "HEAD"), []byte("ref: refs/heads/main\n"), 0o644))
		require.NoError(t, os.MkdirAll(filepath.Join(wt, "sub", ".ssh"), 0o700))
		require.NoError(t, os.WriteFile(filepath.Join(wt, "sub", ".ssh", "id_ed25519"), []byte(sshSecret), 0o600))
		require.NoError(t, os.WriteFile(filepath.Join(wt, "README.md"), []byte("visible\n"), 0o644))
		require.NoError(t, os.Symlink(".env", filepath.Join(wt, "innocent")))
		require.NoError(t, os.Symlink(outsideFile, filepath.Join(wt, "outside-link")))
		// Credentials the old defaults missed: a submodule's and a nested
		// repository's git configuration, direnv and wrangler files, a PKCS#12
		// bundle by its Windows name.
		more := map[string]string{
			".git/modules/lib/config": newMarker(t, "submodule"), "vendor/x/.git/config": newMarker(t, "nested"),
			".envrc": newMarker(t, "envrc"), ".dev.vars": newMarker(t, "devvars"), "certs/client.pfx": newMarker(t, "pfx"),
			"home/.config/gh/hosts.yml": newMarker(t, "gh"), "home/.cargo/credentials.toml": newMarker(t, "cargo"),
			// Names in another case, and a keytab.
			"certs/SERVER.KEY": newMarker(t, "upperkey"), "deploy/.ENV": newMarker(t, "upperenv"), "svc.keytab": newMarker(t, "keytab"),
		}
		for rel, secret := range more {
			require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(wt, rel)), 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(wt, rel), []byte(secret), 0o600))
		}

		sb := openSandbox(t, Policy{Workspace: wt, Hide: DefaultHide})
		go func() {
			// A secret file appears in the worktree after the sandbox started,
			// then the script is told to look.
			time.Sleep(100 * time.Millisecond)
			os.WriteFile(filepath.Join(wt, ".env.local"), []byte(lateSecret), 0o600)
			os.WriteFile(filepath.Join(wt, "late-plain.txt"), []byte("plain"), 0o644)
			os.WriteFile(filepath.Join(sb.Home(), "go"), nil, 0o600)
		}()
		r := runSh(t, sb, `cat README.md .git/HEAD
		while [ ! -e /tmp/go ]; do sleep 0.02; done
		for f in .env .git/config sub/.ssh/id_ed25519 sub/.ssh .env.local late-plain.txt innocent outside-link \
			.git/modules/lib/config vendor/x/.git/config .envrc .dev.vars certs/client.pfx; do
			if cat "$f" 2>/dev/null || test -e "$f"; then echo "VISIBLE $f"; fi
		done
		ls -aR . ; grep -rs pbcanary . ; true`)
		require.Equal(t, 0, r.code, r.out)
		assert.Contains(t, r.out, "visible\nref: refs/heads/main\n", "ordinary files stay readable")
		assert.NotContains(t, r.out, "VISIBLE")
		for _, secret := range []string{envSecret, gitSecret, sshSecret, lateSecret, outside} {
			assert.NotContains(t, r.out, secret)
		}
		for rel, secret := range more {
			assert.NotContains(t, r.out, secret, rel)
		}

		// The agent's edits land in the private copy, not the worktree.
		r = runSh(t, sb, `echo edited > README.md`)
		require.Equal(t, 0, r.code, r.out)
		b, err := os.ReadFile(filepath.Join(wt, "README.md"))
		require.NoError(t, err)
		assert.Equal(t, "visible\n", string(b))
		b, err = os.ReadFile(filepath.Join(sb.Workspace(), "README.md"))
		require.NoError(t, err)
		assert.Equal(t, "edited\n", string(b))
	})
}

func TestHiddenPatterns(t *testing.T) {
	cases := []struct {
		rel  string
		want bool
	}{
		{".env", true}, {"a/b/.env", true}, {".env.production", true}, {"prod.env", true},
		{".envrc", true}, {"app/.envrc", true}, {".dev.vars", true}, {"worker/.dev.vars.staging", true},
		{".git/config", true}, {"sub/.git/config", true}, {"a/b/.git/config", true},
		{".git/modules/lib/config", true}, {".git/modules/a/b/config", true}, {".git/worktrees/w/config.worktree", true},
		{".git/HEAD", false}, {".git/modules/lib/HEAD", false}, {"src/config", false}, {"config", false},
		{".ssh", true}, {"home/.ssh", true}, {"keys/id_rsa.pub", true}, {"keys/id_dsa", true}, {"tls/server.pem", true},
		{"certs/client.pfx", true}, {"android/release.jks", true}, {"app.keystore", true}, {"AuthKey_X.p8", true},
		{"putty.ppk", true}, {"vault.kdbx", true},
		{".yarnrc.yml", true}, {".pgpass", true}, {".my.cnf", true}, {"_netrc", true}, {".vault-token", true},
		{"infra/terraform.tfstate", true}, {"infra/terraform.tfstate.backup", true}, {"prod.tfvars", true},
		{".s3cfg", true}, {".boto", true}, {".azure", true}, {".config/gcloud", true}, {"x/.config/gcloud", true},
		{".claude/.credentials.json", true}, {".claude/settings.local.json", true}, {".claude/settings.json", false},
		{".codex/auth.json", true}, {"gcp/credentials.json", true}, {"service-account-prod.json", true},
		{".htpasswd", true},
		{".config/gh", true}, {"home/.config/gh", true}, {".config/hub", true},
		{".cargo/credentials.toml", true}, {".cargo/credentials", true}, {".cargo/config.toml", false},
		{".gem/credentials", true}, {".terraform.d/credentials.tfrc.json", true}, {".dockercfg", true},
		{".m2/settings.xml", true}, {".m2/settings-security.xml", true}, {"app/settings.xml", false},
		{".gradle/gradle.properties", true}, {"gradle.properties", false},
		{".composer/auth.json", true}, {".config/composer/auth.json", true}, {"auth.json", false},
		{"README.md", false}, {"src/environment.go", false}, {"envelope", false}, {"keyboard.go", false},
		{"docs/pem-format.md", false}, {"package.json", false},
		// Any case: Windows tools and people write SERVER.KEY and Cert.PFX.
		{"SERVER.KEY", true}, {"certs/Client.PFX", true}, {"keys/ID_RSA", true}, {".ENV", true},
		{"Prod.Env", true}, {"home/.SSH", true}, {"sub/.Git/Config", true}, {"home/.config/GH", true},
		{"README.MD", false}, {"Package.JSON", false},
		// Kerberos, VPN, Mercurial, Subversion, Kubernetes, pip, Bundler,
		// Pulumi, GitLab's CLI, R, Streamlit.
		{"svc.keytab", true}, {"krb5cc_1000", true}, {"office.ovpn", true}, {".hgrc", true},
		{"vendor/lib/.hg/hgrc", true}, {"home/.subversion/auth", true}, {"kubeconfig", true},
		{"ops/prod.kubeconfig", true}, {"pip.conf", true}, {".bundle/config", true},
		{"home/.pulumi/credentials.json", true}, {"home/.config/glab-cli", true}, {".Renviron", true},
		{"app/.streamlit/secrets.toml", true}, {".hg/store", false}, {".bundle/ruby", false},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, hidden(c.rel, DefaultHide), "hidden(%q)", c.rel)
	}
}
