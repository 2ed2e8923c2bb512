package runner

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// Source is where a run's registry came from, as run.json records it.
type Source struct {
	// Repo is the git repository (URL or path); empty for a plain directory.
	Repo string `json:"repo,omitempty"`
	// Ref is the ref asked for (a branch, tag or commit).
	Ref string `json:"ref,omitempty"`
	// Commit is the commit the registry was read at.
	Commit string `json:"commit,omitempty"`
	// PRHead is set when Ref was gone (a deleted PR branch) and the
	// registry was read at refs/pull/<PR>/head, the PR's last head, instead.
	PRHead bool `json:"pr_head,omitempty"`
	PR     int  `json:"pr,omitempty"`
}

// String describes the source for logs and reports.
func (s Source) String() string {
	if s.Repo == "" {
		return "local directory"
	}
	short := s.Commit
	if len(short) > 12 {
		short = short[:12]
	}
	if s.PRHead {
		return fmt.Sprintf("%s at %s (branch %s gone; read at refs/pull/%d/head, the PR's last head)", s.Repo, short, s.Ref, s.PR)
	}
	return fmt.Sprintf("%s %s at %s", s.Repo, s.Ref, short)
}

// GitFetch reads a registry from a git repository at a pinned commit. It
// fetches into a bare cache repository (created on first use) under a ref
// of its own, so concurrent runs never share FETCH_HEAD and no working tree
// is touched, then writes the commit's tree into dst. When ref cannot be
// fetched and pr is above zero, it falls back to refs/pull/<pr>/head and
// says so in the returned Source.
func GitFetch(ctx context.Context, cache, repo, ref string, pr int, dst string) (Source, error) {
	src := Source{Repo: repo, Ref: ref, PR: pr}
	if _, err := os.Stat(filepath.Join(cache, "HEAD")); err != nil {
		if err := os.MkdirAll(cache, 0o755); err != nil {
			return src, fmt.Errorf("git cache: %w", err)
		}
		if _, err := git(ctx, cache, "init", "--bare", "--quiet"); err != nil {
			return src, err
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
		return src, fmt.Errorf("fetch %s from %s: %w", ref, repo, err)
	}
	defer git(context.WithoutCancel(ctx), cache, "update-ref", "-d", local)
	commit, err := git(ctx, cache, "rev-parse", "--verify", local+"^{commit}")
	if err != nil {
		return src, err
	}
	src.Commit = strings.TrimSpace(commit)
	archive, err := gitBytes(ctx, cache, "archive", "--format=tar", src.Commit)
	if err != nil {
		return src, err
	}
	return src, untar(bytes.NewReader(archive), dst)
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
	b, err := gitBytes(ctx, dir, args...)
	return string(b), err
}

func gitBytes(ctx context.Context, dir string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", dir}, args...)...)
	// No prompts, no user or system configuration: the cache is ours alone.
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git %s: %w: %s", args[0], err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// untar writes a git archive's regular files and directories into dst.
// Symbolic links and anything that would land outside dst are skipped: a
// registry is data, and a link could point anywhere on the host.
func untar(r io.Reader, dst string) error {
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read archive: %w", err)
		}
		name := filepath.Clean(filepath.FromSlash(h.Name))
		if !filepath.IsLocal(name) {
			continue
		}
		path := filepath.Join(dst, name)
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(path, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				return err
			}
			f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
			if err != nil {
				return err
			}
			_, err = io.Copy(f, io.LimitReader(tr, 64<<20))
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
		}
	}
}
