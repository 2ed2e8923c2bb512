package sandbox

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// UIDRange is a block of host user ids that sandboxes started by a root
// launcher run as, one id per live sandbox (its group id is the same
// number). The ids need no account: nothing on the host but the sandbox's
// own directories belongs to them.
type UIDRange struct {
	First uint32
	Count uint32
}

// DefaultUIDs is the range used when Policy.UIDs is zero: 65536 ids from
// 1879048192 (0x70000000), just above the range systemd hands to
// containers (524288-1879048191) and below the one it keeps for foreign
// images (2147352576 on). Pick another range where these ids are taken.
var DefaultUIDs = UIDRange{First: 0x70000000, Count: 65536}

func (r UIDRange) orDefault() UIDRange {
	if r.Count == 0 {
		return DefaultUIDs
	}
	return r
}

func (r UIDRange) validate() error {
	r = r.orDefault()
	last := uint64(r.First) + uint64(r.Count) - 1
	switch {
	case r.First < 1000:
		return fmt.Errorf("sandbox: uid range from %d: system ids (below 1000) are not for sandboxes", r.First)
	case r.First <= 65534 && last >= 65534:
		return fmt.Errorf("sandbox: uid range %d-%d holds 65534, the overflow id", r.First, last)
	case last >= 1<<32-1:
		return fmt.Errorf("sandbox: uid range %d-%d runs past the last valid id", r.First, last)
	}
	return nil
}

// identity is who a sandbox's processes are on the host.
type identity struct {
	uid, gid int
	// lease holds uid for this sandbox while it lives (see leaseUID); nil
	// when the sandbox runs as the launcher or as a workspace's owner.
	lease *os.File
}

// own reports whether the sandbox runs as the launcher itself, so that
// nothing needs handing over.
func (id identity) own() bool { return id.uid == os.Geteuid() }

// credential is what bubblewrap is started as: nil (the launcher itself)
// when the sandbox runs as the launcher.
func (id identity) credential() *syscall.Credential {
	if id.own() {
		return nil
	}
	return &syscall.Credential{Uid: uint32(id.uid), Gid: uint32(id.gid), Groups: []uint32{}}
}

func (id identity) release() {
	if id.lease != nil {
		id.lease.Close()
	}
}

// chooseIdentity decides the host uid a sandbox for p runs as:
//   - an unprivileged launcher's sandboxes run as the launcher (the kernel
//     lets nobody else map another id);
//   - a root launcher's never run as root: with a live workspace they run as
//     its owner, who may write it anyway (a workspace owned by root is
//     refused, since only root could write it); otherwise each sandbox gets
//     an id of its own from p.UIDs.
func chooseIdentity(p Policy) (identity, error) {
	if os.Geteuid() != 0 {
		return identity{uid: os.Geteuid(), gid: os.Getegid()}, nil
	}
	if p.Workspace != "" && len(p.Hide) == 0 {
		var st unix.Stat_t
		if err := unix.Stat(p.Workspace, &st); err != nil {
			return identity{}, fmt.Errorf("sandbox: workspace: %w", err)
		}
		if st.Uid == 0 {
			return identity{}, fmt.Errorf("sandbox: workspace %s is owned by root: a root launcher never runs a sandbox as root, "+
				"so nothing inside could write it; give it to an unprivileged user (chown), or hide files (Policy.Hide, --hide) to work on a private copy", p.Workspace)
		}
		gid := int(st.Gid)
		if gid == 0 {
			gid = int(st.Uid) // never root's group
		}
		return identity{uid: int(st.Uid), gid: gid}, nil
	}
	return leaseUID(p.UIDs.orDefault())
}

// leaseUID reserves a free id of r for one sandbox. The reservation is an
// abstract unix socket named after the id, bound in the launcher's network
// namespace: binding is atomic across every process there, and the kernel
// releases it when the lease is closed or its holder dies, however it dies.
// Probing starts at a random id so concurrent launchers rarely collide.
func leaseUID(r UIDRange) (identity, error) {
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		return identity{}, fmt.Errorf("sandbox: uid lease: %w", err)
	}
	start := binary.NativeEndian.Uint32(b[:]) % r.Count
	for i := range r.Count {
		uid := r.First + (start+i)%r.Count
		lease, err := bindLease(uid)
		if errors.Is(err, unix.EADDRINUSE) {
			continue
		}
		if err != nil {
			return identity{}, fmt.Errorf("sandbox: uid lease: %w", err)
		}
		return identity{uid: int(uid), gid: int(uid), lease: lease}, nil
	}
	return identity{}, fmt.Errorf("sandbox: every uid of %d-%d is in use by a sandbox", r.First, uint64(r.First)+uint64(r.Count)-1)
}

// leaseName is the abstract socket that reserves uid.
func leaseName(uid uint32) string {
	return "@pairbench-sandbox-uid-" + strconv.FormatUint(uint64(uid), 10)
}

func bindLease(uid uint32) (*os.File, error) {
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	if err := unix.Bind(fd, &unix.SockaddrUnix{Name: leaseName(uid)}); err != nil {
		unix.Close(fd)
		return nil, err
	}
	return os.NewFile(uintptr(fd), leaseName(uid)), nil
}

// handOver gives every entry under dir that the launcher owns to id
// (dir itself included), so the sandbox may use what the caller put
// there. It walks by descriptor and never follows a symbolic link, so a
// link planted by an earlier command in the same directory cannot point
// it anywhere else. A no-op when the sandbox runs as the launcher.
func handOver(dir string, id identity) error {
	if id.own() {
		return nil
	}
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("sandbox: hand over %s: %w", dir, err)
	}
	defer unix.Close(fd)
	if err := chownIfLaunchers(fd, id); err != nil {
		return fmt.Errorf("sandbox: hand over %s: %w", dir, err)
	}
	if err := handOverAt(fd, id, 0); err != nil {
		return fmt.Errorf("sandbox: hand over %s: %w", dir, err)
	}
	return nil
}

// maxHandOverDepth bounds the walk; a deeper tree is not the caller's.
const maxHandOverDepth = 64

func handOverAt(dirfd int, id identity, depth int) error {
	if depth > maxHandOverDepth {
		return nil
	}
	dup, err := unix.Dup(dirfd) // Readdirnames consumes the descriptor it is given
	if err != nil {
		return err
	}
	d := os.NewFile(uintptr(dup), "")
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return err
	}
	for _, name := range names {
		var st unix.Stat_t
		if err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			return err
		}
		if int(st.Uid) == os.Geteuid() {
			if err := unix.Fchownat(dirfd, name, id.uid, id.gid, unix.AT_SYMLINK_NOFOLLOW); err != nil {
				return err
			}
		}
		if st.Mode&unix.S_IFMT != unix.S_IFDIR {
			continue
		}
		sub, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			if errors.Is(err, syscall.ELOOP) || errors.Is(err, syscall.ENOTDIR) || errors.Is(err, fs.ErrNotExist) {
				continue // replaced meanwhile: not the caller's
			}
			return err
		}
		err = handOverAt(sub, id, depth+1)
		unix.Close(sub)
		if err != nil {
			return err
		}
	}
	return nil
}

// chownIfLaunchers gives the file open as fd to id when the launcher owns it.
func chownIfLaunchers(fd int, id identity) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if int(st.Uid) != os.Geteuid() {
		return nil
	}
	return unix.Fchown(fd, id.uid, id.gid)
}

// Permission bits reachable checks on its target.
const (
	mayEnter = 1 // search a directory
	mayRead  = 4 // read a file (and, for a directory, also search it)
)

// reachable returns an error naming the first directory on the way to
// path that id may not search, or path itself when id lacks want on it
// (mayEnter, mayRead): bubblewrap resolves every path it mounts as the
// sandbox's own user. Permission bits only; access control lists are not
// consulted.
func reachable(path string, id identity, want uint32) error {
	if id.own() {
		return nil
	}
	may := func(st *unix.Stat_t, bits uint32) bool {
		switch {
		case int(st.Uid) == id.uid:
			bits <<= 6
		case int(st.Gid) == id.gid:
			bits <<= 3
		}
		return st.Mode&bits == bits
	}
	var ancestors []string
	for d := filepath.Dir(path); ; d = filepath.Dir(d) {
		ancestors = append(ancestors, d)
		if d == "/" || d == "." {
			break
		}
	}
	for i := len(ancestors) - 1; i >= 0; i-- {
		var st unix.Stat_t
		if err := unix.Stat(ancestors[i], &st); err != nil {
			return err
		}
		if !may(&st, mayEnter) {
			return fmt.Errorf("%s: the sandbox's user (uid %d) may not enter %s (mode %04o, owner %d)", path, id.uid, ancestors[i], st.Mode&0o7777, st.Uid)
		}
	}
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return err
	}
	if want == mayRead && st.Mode&unix.S_IFMT == unix.S_IFDIR {
		want |= mayEnter
	}
	if !may(&st, want) {
		return fmt.Errorf("%s: the sandbox's user (uid %d) may not %s it (mode %04o, owner %d)", path, id.uid,
			map[uint32]string{mayEnter: "enter", mayRead: "read", mayRead | mayEnter: "read"}[want], st.Mode&0o7777, st.Uid)
	}
	return nil
}
