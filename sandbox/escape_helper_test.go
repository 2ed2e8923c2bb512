package sandbox

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// escapeArg makes the test binary (see TestMain) attempt one syscall that
// a shell cannot make, from inside a sandbox. It prints "ALLOWED" and exits
// 0 when the kernel let the call through, else prints "DENIED: <errno>"
// and exits 1. Bad usage exits 2.
const escapeArg = "__sandbox-escape"

func runEscape(args []string) int {
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "usage: __sandbox-escape ACTION [ARG]")
		return 2
	}
	arg := ""
	if len(args) > 1 {
		arg = args[1]
	}
	num := func() int { n, _ := strconv.Atoi(arg); return n }
	var err error
	switch args[0] {
	case "remount-rw": // make a read-only mount writable again
		err = unix.Mount("", arg, "", unix.MS_REMOUNT|unix.MS_BIND, "")
	case "mount-tmpfs":
		err = unix.Mount("tmpfs", arg, "tmpfs", 0, "")
	case "mknod": // a block device node (8,0 is sda)
		err = unix.Mknod(arg, unix.S_IFBLK|0o600, int(unix.Mkdev(8, 0)))
	case "ptrace":
		if err = unix.PtraceAttach(num()); err == nil {
			unix.PtraceDetach(num())
		}
	case "io-uring": // a kernel interface with a long record of escalations
		var params [120]byte // struct io_uring_params
		_, _, errno := unix.Syscall(unix.SYS_IO_URING_SETUP, 1, uintptr(unsafe.Pointer(&params[0])), 0)
		if errno != 0 {
			err = errno
		}
	case "vm-read": // read another process's memory without ptrace
		buf := make([]byte, 16)
		local := []unix.Iovec{{Base: &buf[0], Len: uint64(len(buf))}}
		remote := []unix.RemoteIovec{{Base: 0x400000, Len: len(buf)}}
		_, err = unix.ProcessVMReadv(num(), local, remote, 0)
	case "setuid0":
		err = unix.Setuid(0)
	case "unshare-user":
		err = unix.Unshare(unix.CLONE_NEWUSER)
	case "unshare-mount":
		err = unix.Unshare(unix.CLONE_NEWNS)
	case "chroot":
		err = unix.Chroot(arg)
	case "pivot-root":
		err = unix.PivotRoot(arg, arg)
	case "inotify-hold": // open up to ARG inotify instances, say how many, hold them until stdin ends
		n := 0
		for ; n < num(); n++ {
			if _, err = unix.InotifyInit1(0); err != nil {
				break
			}
		}
		fmt.Printf("held %d\n", n)
		os.Stdin.Read(make([]byte, 1))
		return 0
	case "kill":
		err = unix.Kill(num(), unix.SIGKILL)
	case "sethostname":
		err = unix.Sethostname([]byte("escaped"))
	case "keyctl-read": // read a key from the user keyring by description
		var id int
		if id, err = unix.KeyctlSearch(unix.KEY_SPEC_USER_KEYRING, "user", arg, 0); err == nil {
			buf := make([]byte, 256)
			var n int
			if n, err = unix.KeyctlBuffer(unix.KEYCTL_READ, id, buf, 0); err == nil {
				fmt.Printf("%s\n", buf[:min(n, len(buf))])
			}
		}
	case "capset-all": // raise every capability in the permitted set
		hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
		data := [2]unix.CapUserData{{Effective: ^uint32(0), Permitted: ^uint32(0)}, {Effective: ^uint32(0), Permitted: ^uint32(0)}}
		err = unix.Capset(&hdr, &data[0])
	case "pidfd-getfd": // take a copy of any descriptor of process ARG
		var pidfd int
		if pidfd, err = unix.PidfdOpen(num(), 0); err == nil {
			err = unix.EBADF
			for fd := range 256 {
				if got, gerr := unix.PidfdGetfd(pidfd, fd, 0); gerr == nil {
					fmt.Printf("took descriptor %d as %d\n", fd, got)
					err = nil
					break
				} else if !errors.Is(gerr, unix.EBADF) {
					err = gerr
				}
			}
		}
	case "mem-open": // open process ARG's memory, for reading (ro) or writing (rw)
		flag := unix.O_RDONLY
		if len(args) > 2 && args[2] == "rw" {
			flag = unix.O_RDWR
		}
		var fd int
		if fd, err = unix.Open("/proc/"+arg+"/mem", flag, 0); err == nil {
			unix.Close(fd)
		}
	case "create-setuid": // create file ARG with mode 04755 by open, creat, mknod or openat2 (ARGS[2])
		var fd int
		switch how := args[2]; how {
		case "openat":
			fd, err = unix.Open(arg, unix.O_CREAT|unix.O_WRONLY|unix.O_EXCL, 0o4755)
		case "creat":
			fd, err = unix.Creat(arg, 0o4755)
		case "mknod":
			fd, err = -1, unix.Mknod(arg, unix.S_IFREG|0o4755, 0)
		case "openat2":
			fd, err = unix.Openat2(unix.AT_FDCWD, arg, &unix.OpenHow{Flags: unix.O_CREAT | unix.O_WRONLY | unix.O_EXCL, Mode: 0o4755})
		default:
			fmt.Fprintf(os.Stderr, "unknown way %q\n", how)
			return 2
		}
		if fd >= 0 {
			unix.Close(fd)
		}
		if err == nil {
			var st unix.Stat_t
			if err = unix.Stat(arg, &st); err == nil && st.Mode&0o6000 == 0 {
				err = errors.New("created, but the kernel dropped the setuid bit")
			}
		}
	case "chmod-setuid": // set ARG's setuid bit by chmod, fchmod, fchmodat or fchmodat2 (ARGS[2])
		switch how := args[2]; how {
		case "chmod":
			err = unix.Chmod(arg, 0o4755)
		case "fchmod":
			var fd int
			if fd, err = unix.Open(arg, unix.O_RDONLY, 0); err == nil {
				err = unix.Fchmod(fd, 0o6755)
				unix.Close(fd)
			}
		case "fchmodat":
			err = unix.Fchmodat(unix.AT_FDCWD, arg, 0o2755, 0)
		case "fchmodat2":
			p, _ := unix.BytePtrFromString(arg)
			atCWD := unix.AT_FDCWD
			if _, _, errno := unix.Syscall6(unix.SYS_FCHMODAT2, uintptr(atCWD), uintptr(unsafe.Pointer(p)), 0o4755, 0, 0, 0); errno != 0 {
				err = errno
			}
		default:
			fmt.Fprintf(os.Stderr, "unknown way %q\n", how)
			return 2
		}
	case "threads": // hold ARG OS threads at once (the runtime aborts when it cannot make one)
		var started sync.WaitGroup
		for range num() {
			started.Add(1)
			go func() {
				runtime.LockOSThread()
				started.Done()
				unix.Nanosleep(&unix.Timespec{Sec: 30}, nil)
			}()
		}
		started.Wait()
		fmt.Println("threads", num())
	case "setcap": // give file ARG CAP_SETUID, permitted and effective (a file capability, VFS_CAP_REVISION_2)
		data := make([]byte, 20)
		binary.LittleEndian.PutUint32(data[0:], 0x02000000|1)       // revision 2, effective
		binary.LittleEndian.PutUint32(data[4:], 1<<unix.CAP_SETUID) // permitted, low word
		err = unix.Setxattr(arg, "security.capability", data, 0)
	case "alloc": // allocate and touch ARG MiB of memory
		mem := make([][]byte, 0, num())
		for range num() {
			b := make([]byte, 1<<20)
			for i := 0; i < len(b); i += 4096 {
				b[i] = 1
			}
			mem = append(mem, b)
		}
		fmt.Println("allocated", len(mem))
	case "socket": // open a socket of family ARG (a name of socketFamilyByName)
		fam, ok := socketFamilyByName[arg]
		if !ok {
			fmt.Fprintf(os.Stderr, "unknown family %q\n", arg)
			return 2
		}
		var fd int
		if fd, err = unix.Socket(fam[0], fam[1], 0); err == nil {
			unix.Close(fd)
		}
	case "send-fds": // send ARGS[2] descriptors of file ARGS[3] over unix socket ARG with SCM_RIGHTS, then an HTTP request; print the answer's first line
		err = sendDescriptors(arg, num2(args, 2), args[3])
	case "launch": // on the host: be a launcher that the test then kills
		return launchAndWait(arg, args[2], false)
	case "launch-clear": // the same, with a command that drops its parent-death signal
		return launchAndWait(arg, args[2], true)
	case "no-deathsig": // drop this process's parent-death signal, then run sleep ARG
		if err = unix.Prctl(unix.PR_SET_PDEATHSIG, 0, 0, 0, 0); err == nil {
			err = unix.Exec("/bin/sleep", []string{"sleep", arg}, os.Environ())
		}
	default:
		fmt.Fprintf(os.Stderr, "unknown action %q\n", args[0])
		return 2
	}
	if err != nil {
		fmt.Printf("DENIED: %v\n", err)
		return 1
	}
	fmt.Println("ALLOWED")
	return 0
}

// num2 returns args[i] as a number, 0 when it is not one.
func num2(args []string, i int) int {
	n, _ := strconv.Atoi(args[i])
	return n
}

// sendDescriptors connects to the unix socket at path, sends n copies of a
// descriptor of file with the first byte of an HTTP request (SCM_RIGHTS),
// then the rest of it, and prints the first line of the answer.
func sendDescriptors(path string, n int, file string) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if err := unix.Connect(fd, &unix.SockaddrUnix{Name: path}); err != nil {
		return err
	}
	for sent := 0; sent < n; sent += 250 { // SCM_MAX_FD per message
		fds := make([]int, min(250, n-sent))
		for i := range fds {
			fds[i] = int(f.Fd())
		}
		if err := unix.Sendmsg(fd, []byte{' '}, unix.UnixRights(fds...), nil, 0); err != nil {
			return fmt.Errorf("sendmsg: %w", err)
		}
	}
	if _, err := unix.Write(fd, []byte("GET http://denied.test/ HTTP/1.1\r\nHost: denied.test\r\nConnection: close\r\n\r\n")); err != nil {
		return err
	}
	buf := make([]byte, 64)
	k, err := unix.Read(fd, buf)
	if err != nil {
		return err
	}
	line, _, _ := strings.Cut(string(buf[:k]), "\r\n")
	fmt.Println(line)
	return nil
}

// socketFamilyByName names the address families the socket action tries,
// each with a socket type it supports.
var socketFamilyByName = map[string][2]int{
	"unix": {unix.AF_UNIX, unix.SOCK_STREAM}, "inet": {unix.AF_INET, unix.SOCK_STREAM},
	"inet6": {unix.AF_INET6, unix.SOCK_STREAM}, "netlink": {unix.AF_NETLINK, unix.SOCK_RAW},
	"vsock": {unix.AF_VSOCK, unix.SOCK_STREAM}, "alg": {unix.AF_ALG, unix.SOCK_SEQPACKET},
	"packet": {unix.AF_PACKET, unix.SOCK_DGRAM}, "rds": {unix.AF_RDS, unix.SOCK_SEQPACKET},
	"tipc": {unix.AF_TIPC, unix.SOCK_RDM}, "can": {unix.AF_CAN, unix.SOCK_RAW},
	"bluetooth": {unix.AF_BLUETOOTH, unix.SOCK_STREAM}, "xdp": {unix.AF_XDP, unix.SOCK_RAW},
}

// launchAndWait starts a sandbox (per-agent directory under root) running
// two sleeps of length marker, prints "started" and waits for it: the
// launcher a test kills to see the sandbox go with it.
func launchAndWait(marker, root string, clearDeathSignal bool) int {
	p := Policy{TempRoot: root}
	script := "sleep " + marker + " & sleep " + marker + "; wait"
	if clearDeathSignal {
		exe, err := os.Executable()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		p.ReadOnly = []string{exe}
		script = exe + " " + escapeArg + " no-deathsig " + marker + " & " + exe + " " + escapeArg + " no-deathsig " + marker + "; wait"
	}
	sb, err := New(context.Background(), p)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer sb.Close()
	c := sb.Command(context.Background(), "/bin/sh", "-c", script)
	if err := c.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println("started")
	c.Wait()
	return 0
}
