package sandbox

import (
	"encoding/binary"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// TestSeccompFilterDecisions runs the filter in x/net/bpf's interpreter.
// That interpreter loads words big-endian (network order) where the kernel
// loads seccomp_data host-endian, so the test data is big-endian.
func TestSeccompFilterDecisions(t *testing.T) {
	arch, ok := auditArch[runtime.GOARCH]
	if !ok {
		t.Skipf("no seccomp filter on %s", runtime.GOARCH)
	}
	raw, err := seccompFilter()
	require.NoError(t, err)
	require.Zero(t, len(raw)%8)
	var prog []bpf.RawInstruction
	for b := raw; len(b) > 0; b = b[8:] {
		prog = append(prog, bpf.RawInstruction{
			Op: binary.NativeEndian.Uint16(b[0:]), Jt: b[2], Jf: b[3], K: binary.NativeEndian.Uint32(b[4:]),
		})
	}
	insns, ok := bpf.Disassemble(prog)
	require.True(t, ok)
	vm, err := bpf.NewVM(insns)
	require.NoError(t, err)
	decideArgs := func(nr, arch uint32, args ...uint32) uint32 {
		data := make([]byte, 64) // struct seccomp_data
		binary.BigEndian.PutUint32(data[0:], nr)
		binary.BigEndian.PutUint32(data[4:], arch)
		for i, a := range args { // each argument's low word, where the kernel has it
			binary.BigEndian.PutUint32(data[seccompArgs+8*i:], a)
		}
		v, err := vm.Run(data)
		require.NoError(t, err)
		return uint32(v)
	}
	decide := func(nr, arch uint32) uint32 { return decideArgs(nr, arch) }
	deny := uint32(unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM))
	for _, nr := range deniedSyscalls {
		assert.Equal(t, deny, decide(uint32(nr), arch), "syscall %d", nr)
	}
	for _, nr := range []uintptr{unix.SYS_READ, unix.SYS_WRITE, unix.SYS_EXECVE, unix.SYS_CLONE, unix.SYS_OPENAT, unix.SYS_CONNECT} {
		assert.Equal(t, uint32(unix.SECCOMP_RET_ALLOW), decide(uint32(nr), arch), "syscall %d", nr)
	}
	assert.Equal(t, uint32(unix.SECCOMP_RET_KILL_PROCESS), decide(unix.SYS_READ, 0x40000003), "another architecture")
	for _, m := range modeSyscalls {
		args := make([]uint32, m.arg+1)
		for _, mode := range []uint32{0, 0o644, 0o755, 0o1777, unix.S_IFREG | 0o600} {
			args[m.arg] = mode
			assert.Equal(t, uint32(unix.SECCOMP_RET_ALLOW), decideArgs(uint32(m.nr), arch, args...), "syscall %d mode %o", m.nr, mode)
		}
		for _, mode := range []uint32{0o4755, 0o2755, 0o6777, unix.S_IFREG | 0o4000} {
			args[m.arg] = mode
			assert.Equal(t, deny, decideArgs(uint32(m.nr), arch, args...), "syscall %d mode %o", m.nr, mode)
		}
	}
	assert.Equal(t, uint32(unix.SECCOMP_RET_ERRNO|uint32(unix.ENOSYS)), decide(unix.SYS_OPENAT2, arch), "openat2 hides its mode")
	for _, family := range socketFamilies {
		assert.Equal(t, uint32(unix.SECCOMP_RET_ALLOW), decideArgs(unix.SYS_SOCKET, arch, family), "socket family %d", family)
	}
	for _, family := range []uint32{unix.AF_VSOCK, unix.AF_PACKET, unix.AF_ALG, unix.AF_RDS, unix.AF_TIPC, unix.AF_BLUETOOTH, unix.AF_KEY, unix.AF_XDP, 0, 0xffff} {
		assert.Equal(t, uint32(unix.SECCOMP_RET_ERRNO|uint32(unix.EAFNOSUPPORT)), decideArgs(unix.SYS_SOCKET, arch, family), "socket family %d", family)
	}
	if runtime.GOARCH == "amd64" {
		assert.Equal(t, deny, decide(x32SyscallBit|unix.SYS_READ, arch), "x32 ABI")
	}
}

func TestSandboxRunsUnderTheFilter(t *testing.T) {
	needBwrap(t)
	if _, ok := auditArch[runtime.GOARCH]; !ok {
		t.Skipf("no seccomp filter on %s", runtime.GOARCH)
	}
	sb := openSandbox(t, Policy{})
	r := runSh(t, sb, `grep -E '^(Seccomp|NoNewPrivs):' /proc/self/status`)
	require.Equal(t, 0, r.code, r.out)
	assert.Equal(t, "NoNewPrivs:\t1\nSeccomp:\t2\n", r.out)
}
