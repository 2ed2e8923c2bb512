package sandbox

import "golang.org/x/sys/unix"

// modeSyscalls are the calls that create a file or change its mode, with
// the argument that holds the mode.
var modeSyscalls = []modeSyscall{
	{unix.SYS_CHMOD, 1}, {unix.SYS_FCHMOD, 1}, {unix.SYS_FCHMODAT, 2}, {unix.SYS_FCHMODAT2, 2},
	{unix.SYS_OPEN, 2}, {unix.SYS_OPENAT, 3}, {unix.SYS_CREAT, 1},
	{unix.SYS_MKNOD, 1}, {unix.SYS_MKNODAT, 2},
}
