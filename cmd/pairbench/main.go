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
		Use:   "pairbench",
		Short: "Paired A/B benches of WebMCP tools",
		Long: `pairbench answers one question for a change to a website's WebMCP tools:
does the same agent succeed more often, and faster, with the tools registered?

It runs the same agent, model, prompt and browser twice per pair (control
without the tools, treatment with them), in balanced order, grades every
answer by rules, and labels each intent with exact statistics.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		// Without a subcommand, print the help; with an unknown one, say so
		// as a usage error (exit 2).
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageError{fmt.Errorf("unknown command %q; `pairbench --help` lists the commands", args[0])}
			}
			return cmd.Help()
		},
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.AddCommand(commands()...)
	return root
}

// usageError marks an error in how pairbench was called (exit 2).
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// failure marks a command that ran to the end and found problems it already
// printed (exit 1, nothing more to say).
var errFailure = errors.New("failed")

// exitCode translates err into the process exit code, printing it once.
func exitCode(ctx context.Context, err error, stderr io.Writer) int {
	if err == nil {
		return exitOK
	}
	if sig, ok := ctx.Value(signalKey{}).(*caughtSignal); ok && sig.get() != nil {
		fmt.Fprintf(stderr, "pairbench: stopped by %v\n", sig.get())
		if sig.get() == syscall.SIGTERM {
			return exitSIGTERM
		}
		return exitSIGINT
	}
	if errors.Is(err, errFailure) {
		return exitFailure
	}
	fmt.Fprintf(stderr, "pairbench: %v\n", err)
	var ue usageError
	if errors.As(err, &ue) {
		return exitUsage
	}
	return exitFailure
}

type signalKey struct{}

// caughtSignal remembers the first signal that cancelled the command.
type caughtSignal struct{ ch chan os.Signal }

func (c *caughtSignal) get() os.Signal {
	select {
	case s := <-c.ch:
		c.ch <- s
		return s
	default:
		return nil
	}
}

// signalContext returns a context cancelled by the first SIGINT or SIGTERM.
// A second signal exits the process at once.
func signalContext(parent context.Context) (context.Context, func()) {
	caught := &caughtSignal{ch: make(chan os.Signal, 1)}
	ctx, cancel := context.WithCancel(context.WithValue(parent, signalKey{}, caught))
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case s := <-sigs:
			caught.ch <- s
			cancel()
		case <-done:
			return
		}
		select {
		case s := <-sigs:
			if s == syscall.SIGTERM {
				os.Exit(exitSIGTERM)
			}
			os.Exit(exitSIGINT)
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(sigs)
		close(done)
		cancel()
	}
}
