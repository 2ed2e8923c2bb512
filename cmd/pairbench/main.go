// Command pairbench runs paired A/B benches of WebMCP tools: does the same
// agent succeed more often, and faster, with a site's tools registered?
//
// This package only wires the others together: flags, configuration,
// logging, signals and exit codes.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/pairbench/pairbench/sandbox"
)

// Exit codes; docs/cli.md lists them.
const (
	exitOK      = 0
	exitFailure = 1 // the command ran and found problems (a failed check, a bad verdict input)
	exitUsage   = 2 // bad flags or arguments
	exitSIGINT  = 130
	exitSIGTERM = 143
)

func main() {
	// Inside a sandbox, pairbench's own binary is the init that relays the
	// egress proxy and the forwarded loopback ports (see package sandbox).
	if len(os.Args) > 1 && os.Args[1] == sandbox.InitArg {
		os.Exit(sandbox.RunInit(os.Args[2:]))
	}
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// run executes the command line args and returns the process exit code.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	ctx, stop := signalContext(context.Background())
	defer stop()

	root := newRootCmd(stdout, stderr)
	root.SetArgs(args)
	root.SetIn(stdin)
	err := root.ExecuteContext(ctx)
	return exitCode(ctx, err, stderr)
}

func newRootCmd(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:           "pairbench",
		Short:         "Paired A/B benches of WebMCP tools",
		Long:          longHelp("pairbench"),
		SilenceUsage:  true,
		SilenceErrors: true,
		Args:          cobra.ArbitraryArgs,
		RunE:          helpOrUnknown,
	}
	// A bad flag is a usage error (exit 2), for every subcommand: cobra
	// asks the nearest command that has a flag error function.
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.AddCommand(commands()...)
	argsAreUsage(root)
	return root
}

// helpOrUnknown is the RunE of a command that groups others: without a
// subcommand it prints the help; with an unknown one it is a usage error.
func helpOrUnknown(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usageError{fmt.Errorf("unknown command %q; `%s --help` lists the commands", args[0], cmd.CommandPath())}
	}
	return cmd.Help()
}

// argsAreUsage makes the argument check of cmd and of every command below
// it fail as a usage error (exit 2), cobra's own checks (NoArgs) too.
func argsAreUsage(cmd *cobra.Command) {
	if check := cmd.Args; check != nil {
		cmd.Args = func(c *cobra.Command, args []string) error {
			err := check(c, args)
			if err != nil && !errors.As(err, new(usageError)) {
				err = usageError{err}
			}
			return err
		}
	}
	for _, sub := range cmd.Commands() {
		argsAreUsage(sub)
	}
}

// argCount is the argument check of a command that takes from min to max
// arguments, which what names ("one RUN_DIR"): a usage error that says so.
func argCount(min, max int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if n := len(args); n < min || n > max {
			return fmt.Errorf("%s takes %s, got %d: %q", cmd.Name(), what, n, args)
		}
		return nil
	}
}

// usageError marks an error in how pairbench was called (exit 2).
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// errFailure marks a command that ran to the end and found problems it
// already printed (exit 1, nothing more to say).
var errFailure = errors.New("failed")

// exitCode translates err into the process exit code, printing it once.
func exitCode(ctx context.Context, err error, stderr io.Writer) int {
	if err == nil {
		return exitOK
	}
	var sig signalError
	if errors.As(context.Cause(ctx), &sig) {
		fmt.Fprintf(stderr, "pairbench: %v\n", sig)
		return sig.exitCode()
	}
	if errors.Is(err, errFailure) {
		return exitFailure
	}
	var ge gateError
	if errors.As(err, &ge) {
		fmt.Fprintf(stderr, "pairbench: %v\n", err)
		return exitGate
	}
	fmt.Fprintf(stderr, "pairbench: %v\n", err)
	var ue usageError
	if errors.As(err, &ue) {
		return exitUsage
	}
	return exitFailure
}

// signalError is the cause of a context a signal cancelled.
type signalError struct{ sig os.Signal }

func (e signalError) Error() string { return "stopped by " + e.sig.String() }

// exitCode is 143 for SIGTERM and 130 for SIGINT.
func (e signalError) exitCode() int {
	if e.sig == syscall.SIGTERM {
		return exitSIGTERM
	}
	return exitSIGINT
}

// signalContext returns a context cancelled, with a signalError as its
// cause, by the first SIGINT or SIGTERM. A second signal exits the process
// at once.
func signalContext(parent context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(parent)
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case s := <-sigs:
			cancel(signalError{s})
		case <-done:
			return
		}
		select {
		case s := <-sigs:
			os.Exit(signalError{s}.exitCode())
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(sigs)
		close(done)
		cancel(nil)
	}
}
