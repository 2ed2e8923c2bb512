//go:build !amd64 && !arm64

package sandbox

// modeSyscalls is empty where the sandbox has no system call filter.
var modeSyscalls []modeSyscall
