// Package e2e holds pairbench's system tests, behind the e2e build tag
// (`go test -tags e2e ./internal/e2e`, docs/testing.md): they build the
// pairbench binary and the sandbox's init as `make build` does and drive
// them as a user would — run, resume, merge and serve on the real stack
// (Chromium, bubblewrap, the pinned Node tools), killed with SIGKILL and
// SIGTERM, against a real S3 server, a fake GitHub and a fake Kernel.
// They see only the binary's command line, files, exit codes and logs;
// what they share with cmd/pairbench's own tests is internal/clitest. The
// crash tests' runner re-executes the test binary to drive the engine
// through the bench package and watch its steps (bench.Hooks).
package e2e
