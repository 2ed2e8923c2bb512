package bot

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/google/go-github/v66/github"
)

// maxTreeReads bounds the contents API calls one check of a registry makes:
// a registry larger than that is left to the runner to check.
const maxTreeReads = 300

// errUncheckable marks a registry the contents API cannot give whole, as
// LoadFS would read it: more than maxTreeReads paths, a file too large for
// the API, the repository's root as a directory (the API has no path for
// it). Trying again would not help; the runner checks such a registry.
var errUncheckable = errors.New("the contents API cannot give the registry whole")

// contentsFS is a repository at one commit as an fs.FS (with ReadDir and
// Stat), read through the contents API, so intents.LoadFS can check a pull
// request's registry without a checkout. Each path is read at most once.
// A read that fails for another reason than GitHub's 404 is kept in err and
// the path reads as an error meanwhile: a check that read through a
// failure says nothing about the registry (see Bot.checkRegistry).
type contentsFS struct {
	ctx   context.Context
	r     registryAt
	read  map[string]contents
	reads int
	err   error
}

// contents is what the contents API answered for one path: a file (with
// its content) or a directory's entries.
type contents struct {
	file    *github.RepositoryContent
	entries []*github.RepositoryContent
}

func newContentsFS(ctx context.Context, r registryAt) *contentsFS {
	return &contentsFS{ctx: ctx, r: r, read: map[string]contents{}}
}

// get reads name, once.
func (t *contentsFS) get(op, name string) (contents, error) {
	if !fs.ValidPath(name) {
		return contents{}, &fs.PathError{Op: op, Path: name, Err: fs.ErrInvalid}
	}
	if name == "." && t.err == nil {
		// A registry whose paths.domains or paths.intents is ".".
		t.err = fmt.Errorf("%w: it lists the repository's root", errUncheckable)
	}
	if c, ok := t.read[name]; ok {
		return c, nil
	}
	if t.err != nil {
		return contents{}, &fs.PathError{Op: op, Path: name, Err: t.err}
	}
	if t.reads++; t.reads > maxTreeReads {
		t.err = fmt.Errorf("%w: more than %d reads", errUncheckable, maxTreeReads)
		return contents{}, &fs.PathError{Op: op, Path: name, Err: t.err}
	}
	f, entries, _, err := t.r.c.Repositories.GetContents(t.ctx, t.r.owner, t.r.repo, name, &github.RepositoryContentGetOptions{Ref: t.r.sha})
	if isNotFound(err) {
		return contents{}, &fs.PathError{Op: op, Path: name, Err: fs.ErrNotExist}
	}
	if err != nil {
		t.err = fmt.Errorf("read %s at %s: %w", name, short(t.r.sha), err)
		return contents{}, &fs.PathError{Op: op, Path: name, Err: t.err}
	}
	c := contents{file: f, entries: entries}
	t.read[name] = c
	return c, nil
}

// Open opens a file or a directory.
func (t *contentsFS) Open(name string) (fs.File, error) {
	c, err := t.get("open", name)
	if err != nil {
		return nil, err
	}
	if c.file == nil {
		return &contentsDir{info: dirInfo(name), entries: c.entries}, nil
	}
	info := entryInfo{c.file}
	if !info.Mode().IsRegular() {
		return &contentsFile{info: info, r: strings.NewReader("")}, nil
	}
	data, err := c.file.GetContent()
	if err != nil {
		// A file over the API's 1 MB limit comes without its content.
		t.err = fmt.Errorf("%w: %s: %v", errUncheckable, name, err)
		return nil, &fs.PathError{Op: "open", Path: name, Err: t.err}
	}
	return &contentsFile{info: info, r: strings.NewReader(data)}, nil
}

// Stat describes a file or a directory.
func (t *contentsFS) Stat(name string) (fs.FileInfo, error) {
	c, err := t.get("stat", name)
	if err != nil {
		return nil, err
	}
	if c.file == nil {
		return dirInfo(name), nil
	}
	return entryInfo{c.file}, nil
}

// ReadDir lists a directory, sorted by name.
func (t *contentsFS) ReadDir(name string) ([]fs.DirEntry, error) {
	c, err := t.get("readdir", name)
	if err != nil {
		return nil, err
	}
	if c.file != nil {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: errors.New("not a directory")}
	}
	return dirEntries(c.entries), nil
}

func dirEntries(entries []*github.RepositoryContent) []fs.DirEntry {
	out := make([]fs.DirEntry, 0, len(entries))
	for _, e := range entries {
		out = append(out, fs.FileInfoToDirEntry(entryInfo{e}))
	}
	slices.SortFunc(out, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return out
}

// entryInfo is a file or directory entry as the contents API describes it.
type entryInfo struct{ c *github.RepositoryContent }

func (i entryInfo) Name() string { return i.c.GetName() }
func (i entryInfo) Size() int64  { return int64(i.c.GetSize()) }

// Mode maps the API's types: "file", "dir", "symlink", "submodule".
func (i entryInfo) Mode() fs.FileMode {
	switch i.c.GetType() {
	case "file":
		return 0o444
	case "dir":
		return fs.ModeDir | 0o555
	case "symlink":
		return fs.ModeSymlink | 0o777
	}
	return fs.ModeIrregular
}
func (i entryInfo) ModTime() time.Time { return time.Time{} }
func (i entryInfo) IsDir() bool        { return i.Mode().IsDir() }
func (i entryInfo) Sys() any           { return nil }

func dirInfo(name string) entryInfo {
	typ := "dir"
	return entryInfo{&github.RepositoryContent{Name: github.String(path.Base(name)), Type: &typ}}
}

type contentsFile struct {
	info entryInfo
	r    *strings.Reader
}

func (f *contentsFile) Stat() (fs.FileInfo, error) { return f.info, nil }
func (f *contentsFile) Read(p []byte) (int, error) { return f.r.Read(p) }
func (f *contentsFile) Close() error               { return nil }

type contentsDir struct {
	info    entryInfo
	entries []*github.RepositoryContent
	read    int
}

func (d *contentsDir) Stat() (fs.FileInfo, error) { return d.info, nil }
func (d *contentsDir) Read([]byte) (int, error) {
	return 0, &fs.PathError{Op: "read", Path: d.info.Name(), Err: errors.New("is a directory")}
}
func (d *contentsDir) Close() error { return nil }

// ReadDir lists the directory's entries, n at a time (all for n <= 0).
func (d *contentsDir) ReadDir(n int) ([]fs.DirEntry, error) {
	all := dirEntries(d.entries)[d.read:]
	if n > 0 && len(all) == 0 {
		return nil, io.EOF
	}
	if n > 0 && n < len(all) {
		all = all[:n]
	}
	d.read += len(all)
	return all, nil
}
