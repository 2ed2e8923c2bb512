package sandbox

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// gitAs runs git in dir on the host as uid (this process's own when it
// cannot switch), returning its combined output.
func gitAs(t *testing.T, uid int, dir string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), "git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "HOME="+dir, "GIT_CONFIG_NOSYSTEM=1")
	if uid != os.Geteuid() {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid), Groups: []uint32{}}}
	}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestEscapeGitInTheWorkspace: a workspace's repository must not let the
// agent make a later host git run its program (core.fsmonitor,
// core.hooksPath, hooks, a commondir or gitdir pointing at its own
// configuration). The repository's .git (and each submodule's .git) is
// read-only inside and cannot be moved aside, in a live workspace and in a
// Hide copy alike; the agent still reads history.
func TestEscapeGitInTheWorkspace(t *testing.T) {
	needBwrap(t)
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatal("git is not installed (scripts/setup.sh installs it)")
	}
	eachLauncher(t, func(t *testing.T) {
		owner := os.Geteuid()
		if owner == 0 {
			owner = testLauncherUID
		}
		// makeRepo makes a fresh repository with a submodule's checkout in
		// it, and returns it and its .git/config.
		makeRepo := func(t *testing.T) (string, []byte) {
			ws := ownedDir(t, owner)
			run := func(args ...string) {
				t.Helper()
				out, err := gitAs(t, owner, ws, args...)
				require.NoError(t, err, out)
			}
			require.NoError(t, os.WriteFile(filepath.Join(ws, "README.md"), []byte("hello\n"), 0o644))
			giveTo(t, owner, filepath.Join(ws, "README.md"))
			run("init", "-q", "-b", "main")
			run("-c", "user.name=t", "-c", "user.email=t@e", "add", "README.md")
			run("-c", "user.name=t", "-c", "user.email=t@e", "commit", "-q", "-m", "first")
			// A submodule's checkout, as git leaves it: a .git file pointing into
			// the superproject's .git/modules.
			require.NoError(t, os.MkdirAll(filepath.Join(ws, ".git", "modules", "lib"), 0o755))
			require.NoError(t, os.MkdirAll(filepath.Join(ws, "lib"), 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(ws, "lib", ".git"), []byte("gitdir: ../.git/modules/lib\n"), 0o644))
			require.NoError(t, os.WriteFile(filepath.Join(ws, ".gitmodules"), []byte("[submodule \"lib\"]\n\tpath = lib\n\turl = https://example.invalid/lib\n"), 0o644))
			giveTo(t, owner, filepath.Join(ws, ".git", "modules"), filepath.Join(ws, ".git", "modules", "lib"), filepath.Join(ws, "lib"),
				filepath.Join(ws, "lib", ".git"), filepath.Join(ws, ".gitmodules"))
			config, err := os.ReadFile(filepath.Join(ws, ".git", "config"))
			require.NoError(t, err)
			return ws, config
		}
		marker := filepath.Join(sharedDir(t), "pwned")
		evil := "#!/bin/sh\ntouch " + marker + "\n"
		attacks := `cd /workspace
			printf '[core]\n\tfsmonitor = /workspace/evil\n\thooksPath = /workspace/hooks\n' >> .git/config
			printf '%s' "$EVIL" > evil; chmod 755 evil; mkdir -p hooks; cp evil hooks/pre-commit
			cp evil .git/hooks/post-checkout; chmod 755 .git/hooks/post-checkout
			echo ../evilgit > .git/commondir
			mkdir -p evilgit && printf '[core]\n\tfsmonitor = /workspace/evil\n' > evilgit/config
			printf '[core]\n\tfsmonitor = /workspace/evil\n' > .git/config.worktree
			echo "gitdir: ../evilgit" > lib/.git
			mv .git .git-moved || rm -rf .git
			test -d .git && git log --oneline | grep -q first && echo history-readable`
		for _, mode := range []string{"live", "copy"} {
			t.Run(mode, func(t *testing.T) {
				ws, config := makeRepo(t)
				p := Policy{Workspace: ws, Env: map[string]string{"EVIL": evil}}
				if mode == "copy" {
					p.Hide = []string{".env"}
				}
				sb := openSandbox(t, p)
				r := runSh(t, sb, attacks)
				assert.Contains(t, r.out, "history-readable", r.out)
				root := sb.Workspace()
				got, err := os.ReadFile(filepath.Join(root, ".git", "config"))
				require.NoError(t, err, "the repository's .git is still there")
				assert.Equal(t, string(config), string(got), ".git/config changed")
				for _, f := range []string{".git/commondir", ".git/config.worktree", ".git/hooks/post-checkout"} {
					assert.NoFileExists(t, filepath.Join(root, f))
				}
				b, err := os.ReadFile(filepath.Join(root, "lib", ".git"))
				require.NoError(t, err)
				assert.Equal(t, "gitdir: ../.git/modules/lib\n", string(b), "the submodule's .git changed")
				// A host git in the workspace runs nothing of the agent's.
				out, _ := gitAs(t, owner, root, "status")
				out2, _ := gitAs(t, owner, filepath.Join(root, "lib"), "status")
				assert.NoFileExists(t, marker, "a host git ran the agent's program:\n%s\n%s", out, out2)
			})
		}
	})
}

// TestEscapeGitmodulesLeftForTheNextRun: in a live workspace the agent
// writes .gitmodules and whatever its paths lead through, and the next run
// reads and mounts them before anything of the sandbox runs.
//   - A submodule path that is a link to "..": the next run mounted
//     "<path>/.git" read-only from the host, where the link led to the
//     workspace's parent directory, and bubblewrap made the mount point in
//     the new root's own "/.git". A workspace inside a repository (a
//     monorepo's directory, a home under dotfiles) had that repository's
//     .git, configuration and all its history, readable inside.
//   - .gitmodules a FIFO: the next run's Start blocked for good, opening
//     it to read.
func TestEscapeGitmodulesLeftForTheNextRun(t *testing.T) {
	needBwrap(t)
	eachLauncher(t, func(t *testing.T) {
		parent := ownedDir(t, testLauncherUID)
		ws := filepath.Join(parent, "ws")
		require.NoError(t, os.Mkdir(ws, 0o755))
		giveTo(t, testLauncherUID, ws) // a root launcher refuses a live workspace that is root's
		secret := newMarker(t, "parentgit")
		require.NoError(t, os.MkdirAll(filepath.Join(parent, ".git"), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(parent, ".git", "config"), []byte(secret+"\n"), 0o644))

		t.Run("a submodule path through a link", func(t *testing.T) {
			first := openSandbox(t, Policy{Workspace: ws})
			r := runSh(t, first, `printf '[submodule "x"]\n\tpath = sub\n[submodule "y"]\n\tpath = sub/inner\n' > .gitmodules && ln -s .. sub`)
			require.Equal(t, 0, r.code, r.out)
			t.Cleanup(func() { os.Remove(filepath.Join(ws, "sub")); os.Remove(filepath.Join(ws, ".gitmodules")) })
			next := openSandbox(t, Policy{Workspace: ws})
			r = runSh(t, next, `cat /.git/config /workspace/sub/.git/config /workspace/sub/ws/sub/.git/config 2>&1; grep -rs pbcanary / --exclude-dir=proc --exclude-dir=sys --exclude-dir=usr; true`)
			assert.NotContains(t, r.out, secret, "the host's repository around the workspace appeared inside:\n%s", r.out)
		})

		t.Run("a FIFO for .gitmodules", func(t *testing.T) {
			first := openSandbox(t, Policy{Workspace: ws})
			r := runSh(t, first, `mkfifo .gitmodules`)
			require.Equal(t, 0, r.code, r.out)
			fifo := filepath.Join(ws, ".gitmodules")
			t.Cleanup(func() { os.Remove(fifo) })
			next := openSandbox(t, Policy{Workspace: ws})
			done := make(chan error, 1)
			go func() {
				var out bytes.Buffer
				c := next.Command(context.Background(), "/bin/echo", "started")
				c.Stdout = &out
				err := c.Run()
				if err == nil && out.String() != "started\n" {
					err = fmt.Errorf("the command printed %q", out.String())
				}
				done <- err
			}()
			select {
			case err := <-done:
				assert.NoError(t, err)
			case <-time.After(60 * time.Second):
				t.Error("the next run's Start blocked on the FIFO the agent left as .gitmodules")
				// Let the blocked launcher go: a writer opening the FIFO ends its open.
				if f, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
					f.Close()
				}
				<-done
			}
		})
	})
}
