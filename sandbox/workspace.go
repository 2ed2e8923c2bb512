package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/bmatcuk/doublestar/v4"
	"golang.org/x/sys/unix"
)

const noFollow = syscall.O_NOFOLLOW

// hidden reports whether rel (slash-separated, relative to the workspace)
// matches one of the Hide patterns: a pattern without a slash against its
// last element, one with a slash against the whole path ("**" matching any
// number of directories, doublestar's syntax), without regard to case: a
// key named SERVER.KEY or Cert.PFX (as Windows tools write them) is as
// secret as server.key.
func hidden(rel string, patterns []string) bool {
	rel = strings.ToLower(rel)
	base := path.Base(rel)
	for _, p := range patterns {
		subject := base
		if strings.Contains(p, "/") {
			subject = rel
		}
		if ok, _ := doublestar.Match(strings.ToLower(p), subject); ok {
			return true
		}
	}
	return false
}

// copyWorkspace copies the tree at src into dst (which must not exist),
// leaving out what hidden matches (a hidden directory with everything in
// it), and gives the copy to id. Regular files are copied with their
// permission bits (never setuid, setgid or sticky), directories created,
// symbolic links recreated as links (never followed, so a link to a file
// outside src copies nothing of it); devices, pipes and sockets are
// skipped. Names of one file (hard links) stay names of one file in the
// copy.
func copyWorkspace(ctx context.Context, src, dst string, hide []string, id identity) error {
	if err := os.Mkdir(dst, 0o700); err != nil {
		return fmt.Errorf("sandbox: workspace copy: %w", err)
	}
	if err := lchownTo(dst, id); err != nil {
		return fmt.Errorf("sandbox: workspace copy: %w", err)
	}
	copied := map[fileID]string{}
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		if rel == "." {
			return nil
		}
		if hidden(filepath.ToSlash(rel), hide) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		to := filepath.Join(dst, rel)
		switch t := d.Type(); {
		case t.IsDir():
			err = os.Mkdir(to, 0o700)
		case t&fs.ModeSymlink != 0:
			var target string
			if target, err = os.Readlink(p); err == nil {
				err = os.Symlink(target, to)
			}
		case t.IsRegular():
			err = copyFile(p, to, copied)
		default:
			return nil
		}
		if err != nil {
			return err
		}
		return lchownTo(to, id)
	})
	if err != nil {
		return fmt.Errorf("sandbox: workspace copy: %w", err)
	}
	return nil
}

// lchownTo gives path (never a link's target) to id, unless the sandbox
// runs as the launcher.
func lchownTo(path string, id identity) error {
	if id.own() {
		return nil
	}
	return os.Lchown(path, id.uid, id.gid)
}

// fileID names a file on the host (a device and an inode number).
type fileID struct{ dev, ino uint64 }

// copyFile copies the regular file src to dst without following a link at
// either end, keeping src's holes (see copyData). A file with several
// names that copied already holds (a copy's name by the source file's id)
// is linked to that copy, not copied again: an agent that wrote one file
// and thousands of hard links to it in a live workspace, for the price of
// one, had the next run's Hide copy write it thousands of times over.
func copyFile(src, dst string, copied map[fileID]string) error {
	in, err := os.OpenFile(src, os.O_RDONLY|noFollow, 0)
	if err != nil {
		return err
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil {
		return err
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Nlink > 1 {
		id := fileID{uint64(st.Dev), st.Ino}
		if first, ok := copied[id]; ok {
			return os.Link(first, dst)
		}
		copied[id] = dst
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL|noFollow, fi.Mode().Perm()|0o600)
	if err != nil {
		return err
	}
	if err := copyData(out, in, fi.Size()); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// copyData copies the size bytes of in to out, writing only in's data and
// leaving its holes holes. A sparse file costs its writer no disk: an agent
// that left files of 4 GiB each (FileSize) in a live workspace, at no cost,
// had the next run's Hide copy write every byte of them to the host's disk.
func copyData(out, in *os.File, size int64) error {
	fd := int(in.Fd())
	for off := int64(0); off < size; {
		data, err := unix.Seek(fd, off, unix.SEEK_DATA)
		if errors.Is(err, unix.ENXIO) { // nothing but a hole from off on
			break
		}
		if err != nil {
			return fmt.Errorf("seek data: %w", err)
		}
		hole, err := unix.Seek(fd, data, unix.SEEK_HOLE)
		if err != nil {
			return fmt.Errorf("seek hole: %w", err)
		}
		if _, err := in.Seek(data, io.SeekStart); err != nil {
			return err
		}
		if _, err := out.Seek(data, io.SeekStart); err != nil {
			return err
		}
		if _, err := io.CopyN(out, in, hole-data); err != nil {
			return err
		}
		off = hole
	}
	return out.Truncate(size)
}
