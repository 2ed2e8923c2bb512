package runner

import (
	"archive/zip"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/pairbench/pairbench/rundir"
)

// maxTreeSize bounds the registry a commit may hold: GitFetch reads it
// into memory.
const maxTreeSize = 256 << 20

// GitFetch reads the tree dir ("." for the whole tree) of a git repository
// at a pinned commit, without a checkout. It fetches into a bare cache
// repository (created on first use) under a ref of its own, so concurrent
// runs never share FETCH_HEAD and no working tree is touched, and returns
// the commit's tree as a read-only fs.FS held in memory. Symbolic links in
// the tree are entries of their own, never followed. When ref cannot be
// fetched and pr is above zero, it falls back to refs/pull/<pr>/head and
// says so in the returned Source.
func GitFetch(ctx context.Context, cache, repo, ref string, pr int, dir string) (rundir.Source, fs.FS, error) {
	src := rundir.Source{Repo: repo, Ref: ref, PR: pr}
	if dir = path.Clean(dir); !fs.ValidPath(dir) {
		return src, nil, fmt.Errorf("registry path %q: want a relative path inside the repository", dir)
	}
	if _, err := os.Stat(filepath.Join(cache, "HEAD")); err != nil {
		if err := os.MkdirAll(cache, 0o755); err != nil {
			return src, nil, fmt.Errorf("git cache: %w", err)
		}
		if _, err := git(ctx, cache, "init", "--bare", "--quiet"); err != nil {
			return src, nil, err
		}
	}
	local := "refs/pairbench/" + strconv.Itoa(os.Getpid()) + "-" + strings.NewReplacer("/", "-", ":", "-").Replace(ref)
	_, err := git(ctx, cache, "fetch", "--quiet", "--no-tags", "--", repo, "+"+ref+":"+local)
	if err != nil && isCommitID(ref) {
		// A bare commit id is fetched by id (servers that allow it), else
		// found among the branches fetched whole.
		if _, err2 := git(ctx, cache, "fetch", "--quiet", "--no-tags", "--", repo, "+refs/heads/*:refs/pairbench/heads/*"); err2 == nil {
			if _, err3 := git(ctx, cache, "update-ref", local, ref); err3 == nil {
				err = nil
			}
		}
	}
	if err != nil && pr > 0 {
		prRef := "refs/pull/" + strconv.Itoa(pr) + "/head"
		if _, err2 := git(ctx, cache, "fetch", "--quiet", "--no-tags", "--", repo, "+"+prRef+":"+local); err2 == nil {
			err, src.PRHead = nil, true
		}
	}
	if err != nil {
		return src, nil, fmt.Errorf("fetch %s from %s: %w", ref, repo, err)
	}
	defer git(context.WithoutCancel(ctx), cache, "update-ref", "-d", local)
	commit, err := git(ctx, cache, "rev-parse", "--verify", local+"^{commit}")
	if err != nil {
		return src, nil, err
	}
	src.Commit = strings.TrimSpace(commit)
	tree, err := treeAt(ctx, cache, src.Commit, dir)
	if err != nil {
		return src, nil, fmt.Errorf("%s at %s: %w", repo, src.Commit, err)
	}
	return src, tree, nil
}

// treeAt reads the tree dir of commit in the git directory gitDir into
// memory, as a read-only fs.FS.
func treeAt(ctx context.Context, gitDir, commit, dir string) (fs.FS, error) {
	archive, err := gitOutput(ctx, gitDir, maxTreeSize, "archive", "--format=zip", commit, "--", dir)
	if err != nil {
		return nil, err
	}
	zr, err := zip.NewReader(bytes.NewReader(archive), int64(len(archive)))
	if err != nil {
		return nil, fmt.Errorf("read the tree of %s: %w", commit, err)
	}
	return fs.Sub(zr, dir)
}

// GitTreeAt reads the registry directory dir (a path on this machine,
// inside a git working tree) as it is at revision rev of its repository
// (any revision git names: a branch, tag, commit, HEAD~1), in memory,
// without a checkout: the working tree is never touched. It returns the
// commit rev resolved to.
func GitTreeAt(ctx context.Context, dir, rev string) (commit string, _ fs.FS, _ error) {
	if strings.HasPrefix(rev, "-") {
		return "", nil, fmt.Errorf("revision %q: not a git revision", rev)
	}
	top, err := git(ctx, dir, "rev-parse", "--show-toplevel", "--show-prefix")
	if err != nil {
		return "", nil, fmt.Errorf("registry %s is not in a git repository, so it has no revision %s: %w", dir, rev, err)
	}
	lines := strings.SplitN(strings.TrimRight(top, "\n"), "\n", 2)
	root, prefix := lines[0], ""
	if len(lines) == 2 {
		prefix = strings.TrimSuffix(lines[1], "/")
	}
	if prefix == "" {
		prefix = "."
	}
	out, err := git(ctx, root, "rev-parse", "--verify", "--end-of-options", rev+"^{commit}")
	if err != nil {
		return "", nil, fmt.Errorf("revision %s of %s: %w", rev, root, err)
	}
	commit = strings.TrimSpace(out)
	tree, err := treeAt(ctx, root, commit, prefix)
	if err != nil {
		return "", nil, fmt.Errorf("%s at %s: %w", root, commit, err)
	}
	return commit, tree, nil
}

func isCommitID(s string) bool {
	if len(s) < 7 || len(s) > 64 {
		return false
	}
	for _, r := range s {
		if !strings.ContainsRune("0123456789abcdef", r) {
			return false
		}
	}
	return true
}

func git(ctx context.Context, dir string, args ...string) (string, error) {
	b, err := gitOutput(ctx, dir, 1<<20, args...)
	return string(b), err
}

// gitOutput runs git in dir and returns its output, failing when it is
// longer than limit bytes.
func gitOutput(ctx context.Context, dir string, limit int64, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", dir}, args...)...)
	// No prompts, no user or system configuration: the cache is ours alone.
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
	// A cancel kills git's whole process group (a fetch runs helpers such
	// as git-remote-https, which hold the output pipes), and waits for the
	// pipes at most a second: a stalled fetch never outlives its context.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("git %s: %w", args[0], err)
	}
	out, readErr := io.ReadAll(io.LimitReader(stdout, limit+1))
	if int64(len(out)) > limit {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, fmt.Errorf("git %s: more than %d MiB of output", args[0], limit>>20)
	}
	if err := cmd.Wait(); err != nil {
		return nil, fmt.Errorf("git %s: %w: %s", args[0], err, strings.TrimSpace(stderr.String()))
	}
	if readErr != nil {
		return nil, fmt.Errorf("git %s: %w", args[0], readErr)
	}
	return out, nil
}

// GitChangedFiles lists the files of the registry directory dir (a path
// inside a git working tree) that the working tree changes, committed or
// not, since its merge base with revision rev: what a pull request of the
// checked-out branch into rev shows, not what rev changed after the branch
// was made. Paths are slash paths relative to dir.
func GitChangedFiles(ctx context.Context, dir, rev string) ([]string, error) {
	if strings.HasPrefix(rev, "-") {
		return nil, fmt.Errorf("revision %q: not a git revision", rev)
	}
	fork, err := mergeBase(ctx, dir, rev, "HEAD")
	if err != nil {
		return nil, err
	}
	out, err := gitOutput(ctx, dir, 16<<20, "diff", "--name-only", "--no-renames", "--relative", fork, "--", ".")
	if err != nil {
		return nil, fmt.Errorf("changes of %s since %s: %w", dir, rev, err)
	}
	files := lines(out, "")
	// Untracked files are changes too (a new domain not yet added).
	out, err = gitOutput(ctx, dir, 16<<20, "ls-files", "--others", "--exclude-standard", "--", ".")
	if err != nil {
		return nil, fmt.Errorf("untracked files of %s: %w", dir, err)
	}
	return append(files, lines(out, "")...), nil
}

// GitChangedSince lists the files of the tree dir ("." for the whole tree)
// that commit head changes since its merge base with commit base, both in
// the git directory gitDir (GitFetch's cache): the files a pull request of
// head into base shows, as slash paths relative to dir.
func GitChangedSince(ctx context.Context, gitDir, base, head, dir string) ([]string, error) {
	if !isCommitID(base) || !isCommitID(head) {
		return nil, fmt.Errorf("changes of %q since %q: want two commit ids", head, base)
	}
	if dir = path.Clean(dir); !fs.ValidPath(dir) {
		return nil, fmt.Errorf("registry path %q: want a relative path inside the repository", dir)
	}
	fork, err := mergeBase(ctx, gitDir, base, head)
	if err != nil {
		return nil, err
	}
	out, err := gitOutput(ctx, gitDir, 16<<20, "diff", "--name-only", "--no-renames", fork, head, "--", dir)
	if err != nil {
		return nil, fmt.Errorf("changes of %s since %s: %w", head, base, err)
	}
	if dir == "." {
		return lines(out, ""), nil
	}
	return lines(out, dir+"/"), nil
}

// mergeBase returns the commit where the histories of revisions base and
// head met (git merge-base), the point a pull request's changes are
// counted from, the same for a working tree and the git cache. Histories
// that never met, or not within what a shallow clone holds, are an error
// saying so.
func mergeBase(ctx context.Context, dir, base, head string) (string, error) {
	out, err := git(ctx, dir, "merge-base", "--end-of-options", base, head)
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.ExitCode() == 1 {
		return "", fmt.Errorf("%s and %s have no common history here (a shallow clone? fetch their history down to where they branched)", base, head)
	}
	if err != nil {
		return "", fmt.Errorf("where %s branched from %s: %w", head, base, err)
	}
	return strings.TrimSpace(out), nil
}

// lines returns the non-empty lines of git's output that start with
// prefix, without it.
func lines(out []byte, prefix string) []string {
	var files []string
	for _, f := range strings.Split(string(out), "\n") {
		if f, ok := strings.CutPrefix(f, prefix); ok && f != "" {
			files = append(files, f)
		}
	}
	return files
}
