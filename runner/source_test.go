package runner

import (
	"context"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pairbench/pairbench/rundir"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// repoWith makes a git repository whose main branch holds tools/a.js = v1
// and whose branch feature holds v2; refs/pull/7/head points at feature.
func repoWith(t *testing.T) (dir, mainCommit, featureCommit string) {
	t.Helper()
	dir = t.TempDir()
	run := func(args ...string) string {
		cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
			"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com", "GIT_CONFIG_GLOBAL=/dev/null")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "git %v: %s", args, out)
		return strings.TrimSpace(string(out))
	}
	write := func(name, body string) {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644))
	}
	run("init", "--quiet", "-b", "main")
	write("tools/a.js", "v1")
	run("add", ".")
	run("commit", "--quiet", "-m", "one")
	mainCommit = run("rev-parse", "HEAD")
	run("checkout", "--quiet", "-b", "feature")
	write("tools/a.js", "v2")
	require.NoError(t, os.Symlink("/etc/passwd", filepath.Join(dir, "tools", "link")))
	run("add", ".")
	run("commit", "--quiet", "-m", "two")
	featureCommit = run("rev-parse", "HEAD")
	run("update-ref", "refs/pull/7/head", featureCommit)
	run("checkout", "--quiet", "main")
	return dir, mainCommit, featureCommit
}

func TestGitFetchPinsACommitWithoutAWorkingTree(t *testing.T) {
	repo, mainCommit, featureCommit := repoWith(t)
	cache := filepath.Join(t.TempDir(), "cache")
	ctx := context.Background()

	src, tree, err := GitFetch(ctx, cache, repo, "feature", 7, ".")
	require.NoError(t, err)
	assert.Equal(t, featureCommit, src.Commit)
	assert.False(t, src.PRHead)
	b, err := fs.ReadFile(tree, "tools/a.js")
	require.NoError(t, err)
	assert.Equal(t, "v2", string(b))
	info, err := fs.Stat(tree, "tools/link")
	require.NoError(t, err)
	assert.Equal(t, fs.ModeSymlink, info.Mode().Type(), "a symbolic link is an entry of its own")
	f, err := tree.Open("tools/link")
	require.NoError(t, err)
	b, err = io.ReadAll(f)
	f.Close()
	require.NoError(t, err)
	assert.Equal(t, "/etc/passwd", string(b), "reading a link gives its target's name, never the host file")

	_, err = os.Stat(filepath.Join(cache, "HEAD"))
	require.NoError(t, err, "the cache is a bare repository")
	_, err = os.Stat(filepath.Join(cache, "tools"))
	assert.ErrorIs(t, err, os.ErrNotExist, "no working tree in the cache")
	refs, err := git(ctx, cache, "for-each-ref", "refs/pairbench/")
	require.NoError(t, err)
	assert.Empty(t, strings.TrimSpace(refs), "the fetch ref is removed afterwards")

	src, tree, err = GitFetch(ctx, cache, repo, mainCommit, 0, "tools")
	require.NoError(t, err)
	assert.Equal(t, mainCommit, src.Commit, "a pinned commit id")
	b, err = fs.ReadFile(tree, "a.js")
	require.NoError(t, err)
	assert.Equal(t, "v1", string(b), "the tree is the registry's directory")

	_, _, err = GitFetch(ctx, cache, repo, mainCommit, 0, "../outside")
	assert.ErrorContains(t, err, "inside the repository")
}

func TestGitFetchFallsBackToThePRHead(t *testing.T) {
	repo, _, featureCommit := repoWith(t)
	out, err := exec.Command("git", "-C", repo, "branch", "-D", "feature").CombinedOutput()
	require.NoError(t, err, string(out))

	src, _, err := GitFetch(context.Background(), t.TempDir(), repo, "feature", 7, ".")
	require.NoError(t, err)
	assert.True(t, src.PRHead)
	assert.Equal(t, featureCommit, src.Commit)
	assert.Contains(t, src.String(), "refs/pull/7/head")

	_, _, err = GitFetch(context.Background(), t.TempDir(), repo, "feature", 0, ".")
	assert.ErrorContains(t, err, "fetch feature", "without a PR there is nothing to fall back to")
}

// TestSourceStringCarriesNoCredential: a registry read through a URL with a
// token (the service's --git-url for a private registry) is named in
// reports without it.
func TestSourceStringCarriesNoCredential(t *testing.T) {
	s := rundir.Source{Repo: "https://x-access-token:ghs_secret0123456789@github.com/o/r.git", Ref: "main", Commit: strings.Repeat("a", 40)}
	assert.Equal(t, "https://github.com/o/r.git main at aaaaaaaaaaaa", s.String())
	assert.Equal(t, "/srv/registry main at aaaaaaaaaaaa", rundir.Source{Repo: "/srv/registry", Ref: "main", Commit: strings.Repeat("a", 40)}.String())
}
