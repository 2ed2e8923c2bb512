package sandbox

import (
	"encoding/binary"
	"fmt"
	"runtime"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// deniedSyscalls fail with EPERM inside the sandbox. Namespaces and
// dropped capabilities already stop most of them; the filter is a second
// wall, and the only one for the first group:
//   - reading or writing another process's memory or taking its
//     descriptors (ptrace, process_vm_*, pidfd_getfd), even of a process
//     inside the sandbox such as its PID 1;
//   - kernel interfaces with a record of privilege escalations that an agent
//     never needs (keyrings, eBPF, perf events, userfaultfd, io_uring);
//   - mounting, module loading, kexec, swap, reboot, file handles.
var deniedSyscalls = []uintptr{
	unix.SYS_PTRACE, unix.SYS_PROCESS_VM_READV, unix.SYS_PROCESS_VM_WRITEV, unix.SYS_PIDFD_GETFD,
	unix.SYS_KEYCTL, unix.SYS_ADD_KEY, unix.SYS_REQUEST_KEY,
	unix.SYS_BPF, unix.SYS_PERF_EVENT_OPEN, unix.SYS_USERFAULTFD,
	unix.SYS_IO_URING_SETUP, unix.SYS_IO_URING_ENTER, unix.SYS_IO_URING_REGISTER,
	unix.SYS_MOUNT, unix.SYS_UMOUNT2, unix.SYS_PIVOT_ROOT, unix.SYS_FSOPEN, unix.SYS_FSMOUNT,
	unix.SYS_MOVE_MOUNT, unix.SYS_OPEN_TREE, unix.SYS_MOUNT_SETATTR,
	unix.SYS_INIT_MODULE, unix.SYS_FINIT_MODULE, unix.SYS_DELETE_MODULE,
	unix.SYS_KEXEC_LOAD, unix.SYS_KEXEC_FILE_LOAD,
	unix.SYS_SWAPON, unix.SYS_SWAPOFF, unix.SYS_REBOOT, unix.SYS_ACCT,
	unix.SYS_OPEN_BY_HANDLE_AT, unix.SYS_NAME_TO_HANDLE_AT,
}

// socketFamilies are the address families a sandboxed process may open
// sockets of (socket's first argument); any other fails with
// EAFNOSUPPORT, as on a kernel without it. A network namespace confines
// only these: vsock (AF_VSOCK) shares one port space across every
// namespace of the machine, so a sandbox could reach the hypervisor's
// and the host's vsock services, and the rarer families (AF_ALG, AF_RDS,
// AF_TIPC, Bluetooth, ...) are kernel code no agent needs. Netlink stays:
// C libraries, Node and Chromium list interfaces and addresses with it.
var socketFamilies = []uint32{unix.AF_UNIX, unix.AF_INET, unix.AF_INET6, unix.AF_NETLINK}

// modeSyscall is a system call that sets a file's mode from argument arg.
type modeSyscall struct {
	nr  uintptr
	arg int
}

// setIDBits are the mode bits no file made or changed inside may carry:
// a host user running a planted binary would run it as the sandbox's user.
const setIDBits = unix.S_ISUID | unix.S_ISGID

// hiddenModeSyscalls take their mode inside a structure the filter cannot
// read (openat2's open_how): they fail with ENOSYS, and callers fall back to
// openat, whose mode it can.
var hiddenModeSyscalls = []uintptr{unix.SYS_OPENAT2}

// auditArch is the seccomp architecture of the running binary.
var auditArch = map[string]uint32{
	"amd64": unix.AUDIT_ARCH_X86_64,
	"arm64": unix.AUDIT_ARCH_AARCH64,
}

// x32SyscallBit marks x32-ABI system calls on amd64, which would otherwise
// slip past a filter written for the 64-bit numbers.
const x32SyscallBit = 0x40000000

// Offsets in struct seccomp_data.
const (
	seccompNr   = 0
	seccompArch = 4
	seccompArgs = 16 // args[0]; each is 8 bytes, its low word first on little-endian hosts
)

// seccompFilter returns the sandbox's seccomp program as bubblewrap's
// --seccomp reads it (struct sock_filter array, native byte order), or nil
// on an architecture it does not know. A system call of another
// architecture (e.g. i386 through int 0x80) kills the process; deniedSyscalls
// and a mode with setIDBits in modeSyscalls fail with EPERM;
// hiddenModeSyscalls with ENOSYS; a socket of a family outside
// socketFamilies with EAFNOSUPPORT.
func seccompFilter() ([]byte, error) {
	arch, ok := auditArch[runtime.GOARCH]
	if !ok {
		return nil, nil
	}
	var p program
	p.add(bpf.LoadAbsolute{Off: seccompArch, Size: 4})
	p.jumpIf(bpf.JumpEqual, arch, "", "kill")
	p.add(bpf.LoadAbsolute{Off: seccompNr, Size: 4})
	if runtime.GOARCH == "amd64" {
		p.jumpIf(bpf.JumpGreaterOrEqual, x32SyscallBit, "deny", "")
	}
	for _, nr := range deniedSyscalls {
		p.jumpIf(bpf.JumpEqual, uint32(nr), "deny", "")
	}
	for _, nr := range hiddenModeSyscalls {
		p.jumpIf(bpf.JumpEqual, uint32(nr), "enosys", "")
	}
	// socket: allow the families in socketFamilies, refuse the rest.
	p.jumpIf(bpf.JumpEqual, uint32(unix.SYS_SOCKET), "", "modes")
	p.add(bpf.LoadAbsolute{Off: seccompArgs, Size: 4})
	for _, f := range socketFamilies {
		p.jumpIf(bpf.JumpEqual, f, "allow", "")
	}
	p.add(bpf.RetConstant{Val: unix.SECCOMP_RET_ERRNO | uint32(unix.EAFNOSUPPORT)})
	p.label("modes") // the accumulator still holds the call's number
	// Each mode check: if nr matches, load the mode's low word and deny
	// when it holds a set-id bit, else allow; if not, on to the next.
	for _, m := range modeSyscalls {
		p.jumpIf(bpf.JumpEqual, uint32(m.nr), "", fmt.Sprint("next-", m.nr))
		p.add(bpf.LoadAbsolute{Off: uint32(seccompArgs + 8*m.arg), Size: 4})
		p.jumpIf(bpf.JumpBitsSet, setIDBits, "deny", "allow")
		p.label(fmt.Sprint("next-", m.nr))
		p.add(bpf.LoadAbsolute{Off: seccompNr, Size: 4})
	}
	p.label("allow")
	p.add(bpf.RetConstant{Val: unix.SECCOMP_RET_ALLOW})
	p.label("deny")
	p.add(bpf.RetConstant{Val: unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)})
	p.label("enosys")
	p.add(bpf.RetConstant{Val: unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)})
	p.label("kill")
	p.add(bpf.RetConstant{Val: unix.SECCOMP_RET_KILL_PROCESS})

	insns, err := p.resolve()
	if err != nil {
		return nil, fmt.Errorf("sandbox: seccomp filter: %w", err)
	}
	raw, err := bpf.Assemble(insns)
	if err != nil {
		return nil, fmt.Errorf("sandbox: seccomp filter: %w", err)
	}
	out := make([]byte, 0, 8*len(raw))
	for _, ins := range raw {
		out = binary.NativeEndian.AppendUint16(out, ins.Op)
		out = append(out, ins.Jt, ins.Jf)
		out = binary.NativeEndian.AppendUint32(out, ins.K)
	}
	return out, nil
}

// program is a BPF program with forward jumps to named labels, which
// resolve turns into offsets.
type program struct {
	insns  []bpf.Instruction
	jumps  map[int][2]string // instruction index -> labels when true, when false ("" is the next)
	labels map[string]int
}

func (p *program) add(i bpf.Instruction) { p.insns = append(p.insns, i) }

func (p *program) jumpIf(cond bpf.JumpTest, val uint32, ifTrue, ifFalse string) {
	if p.jumps == nil {
		p.jumps = map[int][2]string{}
	}
	p.jumps[len(p.insns)] = [2]string{ifTrue, ifFalse}
	p.add(bpf.JumpIf{Cond: cond, Val: val})
}

func (p *program) label(name string) {
	if p.labels == nil {
		p.labels = map[string]int{}
	}
	p.labels[name] = len(p.insns)
}

func (p *program) resolve() ([]bpf.Instruction, error) {
	skip := func(from int, label string) (uint8, error) {
		if label == "" {
			return 0, nil
		}
		to, ok := p.labels[label]
		if !ok || to <= from {
			return 0, fmt.Errorf("jump from %d to %q: no such label ahead", from, label)
		}
		if to-from-1 > 255 {
			return 0, fmt.Errorf("jump from %d to %q: too far", from, label)
		}
		return uint8(to - from - 1), nil
	}
	for i, l := range p.jumps {
		j := p.insns[i].(bpf.JumpIf)
		var err error
		if j.SkipTrue, err = skip(i, l[0]); err != nil {
			return nil, err
		}
		if j.SkipFalse, err = skip(i, l[1]); err != nil {
			return nil, err
		}
		p.insns[i] = j
	}
	return p.insns, nil
}
