package sandbox

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// moreSecretFiles are the credential files an attacker looks for next in a
// worktree that holds a home directory (a dotfiles repository, a user's
// home mounted as the workspace), beyond those TestEscapeHiddenWorktreeFiles
// plants: shell and database histories (export TOKEN=... is typed there),
// git's own user configuration and credential store, agents' and
// assistants' logins, cloud and deployment CLIs' tokens, password stores,
// key files, browser profiles (cookies, saved logins).
var moreSecretFiles = []string{
	".bash_history", ".zsh_history", "home/.psql_history", "home/.mysql_history", ".python_history", ".node_repl_history",
	".gitconfig", ".config/git/credentials", "home/.config/git/config",
	".claude.json", ".config/github-copilot/apps.json", "home/.gemini/oauth_creds.json",
	".config/configstore/firebase-tools.json", ".config/doctl/config.yaml", ".fly/config.yml",
	".config/ngrok/ngrok.yml", ".ngrok2/ngrok.yml", ".cloudflared/0c9a1f2e.json",
	".wrangler/config/default.toml", ".config/.wrangler/config/default.toml",
	".databrickscfg", ".snowflake/connections.toml", ".dbt/profiles.yml", ".oci/config",
	".config/rclone/rclone.conf", ".mylogin.cnf", ".kaggle/kaggle.json", ".cache/huggingface/token", ".huggingface/token",
	".config/netlify/config.json", ".config/stripe/config.toml", ".sentryclirc", ".config/containers/auth.json",
	".config/op/config", ".password-store/email/work.gpg", ".config/sops/age/keys.txt", ".local/share/keyrings/login.keyring",
	".config/google-chrome/Default/Cookies", ".config/chromium/Default/Login Data", ".mozilla/firefox/x.default/logins.json",
}

// TestEscapeMoreHiddenWorktreeFiles plants each of moreSecretFiles, with a
// canary, in a worktree the sandbox gets with DefaultHide, and looks for
// them from inside: none may be there.
func TestEscapeMoreHiddenWorktreeFiles(t *testing.T) {
	assertHiddenInWorktree(t, moreSecretFiles,
		[]string{"README.md", ".wrangler/state/v3/cache.txt", "docs/history.md", "src/config.go"})
}

// tokenStores are where the tools whose token formats SecretBearing knows
// keep those tokens in a home directory, beyond moreSecretFiles: Hugging
// Face's every login (hf_), Poetry's and uv's index credentials without a
// keyring (pypi-), pnpm's global configuration and npm's global and
// built-in npmrc, Bun's user configuration (npm_), python-gitlab's
// configuration (glpat-), Helm's repository passwords, and Google's application default credentials
// copied out of gcloud's directory (a refresh token, 1//0).
var tokenStores = []string{
	".cache/huggingface/stored_tokens", "home/.config/pypoetry/auth.toml",
	".local/share/uv/credentials/credentials.toml", ".config/pnpm/rc", "node/etc/npmrc", ".bunfig.toml",
	".python-gitlab.cfg", ".config/helm/repositories.yaml",
	"keys/application_default_credentials.json",
}

// TestEscapeTokenStoresInTheWorktree plants each of tokenStores with a
// canary in a worktree the sandbox gets with DefaultHide: on 124475f's
// defaults every one was visible inside. A project's own files beside them
// (Bun's and Poetry's project configuration, uv's lock file) stay.
func TestEscapeTokenStoresInTheWorktree(t *testing.T) {
	assertHiddenInWorktree(t, tokenStores,
		[]string{"bunfig.toml", "pyproject.toml", "uv.lock", "home/.config/pypoetry/config.toml", "src/rc"})
}

// assertHiddenInWorktree plants each of secret (paths relative to a fresh
// worktree) with a canary and each of visible with its own text, gives
// the worktree to a sandbox with DefaultHide and reads every file inside:
// no secret may be there, every visible file must.
func assertHiddenInWorktree(t *testing.T, secret, visible []string) {
	needBwrap(t)
	eachLauncher(t, func(t *testing.T) {
		wt := t.TempDir()
		canary := newMarker(t, "hidden")
		for _, rel := range secret {
			p := filepath.Join(wt, rel)
			require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
			require.NoError(t, os.WriteFile(p, []byte(canary+" "+rel+"\n"), 0o600))
		}
		for _, rel := range visible {
			p := filepath.Join(wt, rel)
			require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
			require.NoError(t, os.WriteFile(p, []byte("visible "+rel+"\n"), 0o644))
		}
		sb := openSandbox(t, Policy{Workspace: wt, Hide: DefaultHide})
		r := runSh(t, sb, `grep -rh . /workspace 2>/dev/null; true`)
		require.Equal(t, 0, r.code, r.out)
		for _, rel := range visible {
			assert.Contains(t, r.out, "visible "+rel, "an ordinary file went missing")
		}
		var leaked []string
		for line := range strings.Lines(r.out) {
			if rest, ok := strings.CutPrefix(strings.TrimSpace(line), canary+" "); ok {
				leaked = append(leaked, rest)
			}
		}
		assert.Empty(t, leaked, "credential files visible inside")
	})
}

// TestEscapeSubmoduleThroughALink: in a live workspace the agent writes
// .gitmodules and may make a submodule's path a link. The next run mounts
// each submodule's .git read-only over itself; with the path a relative
// link out of the workspace (../NAME-other from a workspace directly
// under /), the mount's source resolves on the host to another
// repository's .git, and the destination would, if bubblewrap resolved it
// the same way in the new root, put it inside. It does not: it cannot make
// the mount point through the link, so the next run fails to start (the
// agent can spoil a live workspace for later runs, as it can by deleting
// it) and nothing of the other repository is seen.
func TestEscapeSubmoduleThroughALink(t *testing.T) {
	needBwrap(t)
	if os.Geteuid() != 0 {
		t.Skip("the attack needs a workspace directly under /, which only root may make")
	}
	name := "pbrt-" + newMarker(t, "ws")[len("pbcanary-ws-"):]
	ws, other := "/"+name, "/"+name+"-other"
	for _, d := range []string{ws, other} {
		require.NoError(t, os.Mkdir(d, 0o755))
		t.Cleanup(func() { os.RemoveAll(d) })
	}
	require.NoError(t, os.Chown(ws, testLauncherUID, testLauncherUID)) // a live workspace is its owner's
	secret := newMarker(t, "othergit")
	require.NoError(t, os.MkdirAll(filepath.Join(other, ".git"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(other, ".git", "config"), []byte(secret+"\n"), 0o644))

	first := openSandbox(t, Policy{Workspace: ws})
	r := runSh(t, first, `printf '[submodule "x"]\n\tpath = sub\n' > .gitmodules && ln -s ../`+name+`-other sub`)
	require.Equal(t, 0, r.code, r.out)

	next, err := New(t.Context(), Policy{Workspace: ws})
	if err != nil {
		t.Logf("the next run is refused: %v", err)
		return
	}
	t.Cleanup(func() { next.Close() })
	r = runSh(t, next, `cat /`+name+`-other/.git/config /workspace/sub/.git/config 2>&1; true`)
	t.Logf("the next run: exit %d: %s", r.code, r.out)
	assert.NotContains(t, r.out, secret, "another repository's .git on the host appeared inside")
}

// TestEscapeSparseFilesInTheWorkspace: a sparse file costs its writer no
// disk. An agent in a live workspace left files as large as FileSize
// allows (4 GiB each by default) at no cost, and the next run that hid
// files in that workspace copied every byte of them onto the host's disk
// (the old copy wrote 256 MiB for this test's one file). The copy keeps
// holes; data around them is copied as it is.
func TestEscapeSparseFilesInTheWorkspace(t *testing.T) {
	needBwrap(t)
	eachLauncher(t, func(t *testing.T) {
		ws := ownedDir(t, testLauncherUID)
		first := openSandbox(t, Policy{Workspace: ws})
		r := runSh(t, first, `printf head > big && truncate -s 256M big && printf tail >> big && ls -ls big`)
		require.Equal(t, 0, r.code, r.out)

		next := openSandbox(t, Policy{Workspace: ws, Hide: DefaultHide})
		var src, dst unix.Stat_t
		require.NoError(t, unix.Stat(filepath.Join(ws, "big"), &src))
		require.NoError(t, unix.Stat(filepath.Join(next.Workspace(), "big"), &dst))
		t.Logf("the agent's file: %d bytes in %d KiB of disk; the copy: %d KiB", src.Size, src.Blocks/2, dst.Blocks/2)
		assert.Equal(t, src.Size, dst.Size)
		assert.LessOrEqual(t, dst.Blocks, src.Blocks+1024, "the copy wrote the sparse file's holes to the host's disk")
		r = runSh(t, next, `head -c 4 big; tail -c 4 big; echo; cmp -n 268435452 -i 4:0 big /dev/zero && echo zeros`)
		assert.Equal(t, "headtail\nzeros\n", r.out, "the copy holds the same bytes")
	})
}

// TestEscapeHardLinksInTheWorkspace: hard links cost their writer nothing
// either. An agent in a live workspace wrote one file and a hundred more
// names for it, and the next run that hid files there copied it a hundred
// and one times onto the host's disk (one 1 MiB file: 101 MiB; one of
// FileSize and thousands of names would fill any disk). Names of one file
// stay names of one file in the copy.
func TestEscapeHardLinksInTheWorkspace(t *testing.T) {
	needBwrap(t)
	eachLauncher(t, func(t *testing.T) {
		ws := ownedDir(t, testLauncherUID)
		first := openSandbox(t, Policy{Workspace: ws})
		r := runSh(t, first, `head -c 1048576 /dev/urandom > big && mkdir -p d && for i in $(seq 100); do ln big d/l$i || exit 1; done`)
		require.Equal(t, 0, r.code, r.out)

		next := openSandbox(t, Policy{Workspace: ws, Hide: DefaultHide})
		big, err := os.Stat(filepath.Join(next.Workspace(), "big"))
		require.NoError(t, err)
		copies := 0
		for i := 1; i <= 100; i++ {
			fi, err := os.Stat(filepath.Join(next.Workspace(), "d", "l"+strconv.Itoa(i)))
			require.NoError(t, err)
			if !os.SameFile(big, fi) {
				copies++
			}
		}
		assert.Zero(t, copies, "the copy wrote %d more copies of the one file onto the host's disk", copies)
		r = runSh(t, next, `cmp big d/l100 && echo same`)
		assert.Equal(t, "same\n", r.out)
	})
}
