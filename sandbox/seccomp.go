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
//   - reading or writing another process's memory (ptrace, process_vm_*),
//     even of a process inside the sandbox such as its PID 1;
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

// auditArch is the seccomp architecture of the running binary.
var auditArch = map[string]uint32{
	"amd64": unix.AUDIT_ARCH_X86_64,
	"arm64": unix.AUDIT_ARCH_AARCH64,
}

// x32SyscallBit marks x32-ABI system calls on amd64, which would otherwise
// slip past a filter written for the 64-bit numbers.
const x32SyscallBit = 0x40000000

// seccompFilter returns the sandbox's seccomp program as bubblewrap's
// --seccomp reads it (struct sock_filter array, native byte order), or nil
// on an architecture it does not know. A system call of another
// architecture (e.g. i386 through int 0x80) kills the process.
func seccompFilter() ([]byte, error) {
	arch, ok := auditArch[runtime.GOARCH]
	if !ok {
		return nil, nil
	}
	deny := bpf.RetConstant{Val: unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)}
	prog := []bpf.Instruction{
		bpf.LoadAbsolute{Off: 4, Size: 4}, // seccomp_data.arch
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: arch, SkipTrue: 1},
		bpf.RetConstant{Val: unix.SECCOMP_RET_KILL_PROCESS},
		bpf.LoadAbsolute{Off: 0, Size: 4}, // seccomp_data.nr
	}
	checks := len(deniedSyscalls)
	if runtime.GOARCH == "amd64" {
		checks++
	}
	// Every check jumps to the deny at the end: past the checks after it
	// and the allow.
	for i, nr := range deniedSyscalls {
		prog = append(prog, bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(nr), SkipTrue: uint8(checks - i)})
	}
	if runtime.GOARCH == "amd64" {
		prog = append(prog, bpf.JumpIf{Cond: bpf.JumpGreaterOrEqual, Val: x32SyscallBit, SkipTrue: 1})
	}
	prog = append(prog, bpf.RetConstant{Val: unix.SECCOMP_RET_ALLOW}, deny)

	raw, err := bpf.Assemble(prog)
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
