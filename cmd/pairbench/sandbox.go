package main

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"

	"github.com/spf13/cobra"

	"github.com/pairbench/pairbench/bench"
	"github.com/pairbench/pairbench/sandbox"
)

func newSandboxCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "sandbox",
		Short: "Try the agent sandbox by hand, or check that it is sound here",
		Long:  longHelp("sandbox"),
		Args:  cobra.ArbitraryArgs,
		RunE:  helpOrUnknown,
	}
	cmd.AddCommand(newSandboxCheckCmd(), newSandboxRunCmd())
	return cmd
}

func newSandboxCheckCmd() *cobra.Command {
	var hidden []string
	var chromium string
	browser := true
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Check that a sandbox can be created here and sees nothing it must not",
		Long:  longHelp("sandbox-check"),
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			wd, err := os.Getwd()
			if err != nil {
				return fmt.Errorf("sandbox check: %w", err)
			}
			for _, h := range hidden {
				// A path that is not there proves nothing hidden.
				if _, err := os.Lstat(h); err != nil {
					return usageError{fmt.Errorf("--hidden %s: %w", h, err)}
				}
			}
			rep, err := bench.CheckHost(cmd.Context(), append([]string{wd}, hidden...), "", chromium, browser)
			var ce *sandbox.CheckError
			if errors.As(err, &ce) {
				fmt.Fprintf(cmd.ErrOrStderr(), "sandbox check failed: %s\n", ce.Reason)
				return errFailure
			}
			if err != nil {
				return err
			}
			msg := "sandbox check passed: bubblewrap works and the sandbox sees only what it should"
			if browser {
				msg += "; the trial browser is confined"
			}
			fmt.Fprintln(cmd.OutOrStdout(), msg)
			fmt.Fprintln(cmd.OutOrStdout(), "limits:", rep.Limits)
			fmt.Fprintln(cmd.OutOrStdout(), "device nodes:", rep.Devices)
			fmt.Fprintln(cmd.OutOrStdout(), "init:", rep.Init)
			fmt.Fprintln(cmd.OutOrStdout(), "shared between sandboxes:", rep.Shared)
			return nil
		},
	}
	cmd.Flags().StringArrayVar(&hidden, "hidden", nil, "a host `PATH` the sandbox must not see (repeatable; the current directory always is)")
	cmd.Flags().BoolVar(&browser, "browser", true, "also check the trial browser's confinement (needs Chromium)")
	cmd.Flags().StringVar(&chromium, "chromium", os.Getenv(bench.ChromiumEnv), "Chromium binary of the trial browsers (default $"+bench.ChromiumEnv+", else "+bench.DefaultChromium+")")
	return cmd
}

func newSandboxRunCmd() *cobra.Command {
	var o sandbox.Manual
	var verbose bool
	cmd := &cobra.Command{
		Use:   "run [flags] -- CMD [ARGS...]",
		Short: "Run a command in the sandbox, deny-by-default",
		Long:  longHelp("sandbox-run"),
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 || cmd.ArgsLenAtDash() != 0 {
				return errors.New("sandbox run: put the command after --, as in: pairbench sandbox run -- CMD ARGS")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runSandboxed(cmd, o, verbose, args)
		},
	}
	f := cmd.Flags()
	f.StringArrayVar(&o.Allow, "allow-host", nil, "let the command reach `HOST[:PORT,...]` through the proxy (repeatable)")
	f.IntSliceVar(&o.ForwardPorts, "allow-port", nil, "forward host loopback `PORT` to the same port inside (repeatable)")
	f.StringArrayVar(&o.Secrets, "secret", nil, "`NAME=HOSTVAR@HOST[,HOST]`: a placeholder in NAME, swapped for $HOSTVAR on requests to HOST (repeatable)")
	f.StringArrayVar(&o.Env, "env", nil, "pass the host variable `NAME` (repeatable)")
	f.StringVar(&o.Workspace, "workspace", "", "host `DIR` mounted read-write at /workspace (default: a fresh empty one)")
	f.StringArrayVar(&o.Hide, "hide", nil, "`PATTERN` of workspace files that must read as absent, e.g. .env (repeatable; the workspace is then a private copy)")
	f.StringArrayVar(&o.ReadOnly, "ro", nil, "mount a program's binary or package `PATH` read-only at the same path (repeatable)")
	f.Int64Var(&o.Limits.Memory, "memory", 0, "memory cap in `BYTES` (the whole sandbox's with a delegated cgroup v2, else each process's; default 4 GiB)")
	f.IntVar(&o.Limits.Pids, "pids", 0, "cap on processes and threads (default 512)")
	f.Float64Var(&o.Limits.CPU, "cpus", 0, "CPU cap in CPUs (needs a delegated cgroup v2)")
	f.StringVar(&o.Limits.Parent, "cgroup-parent", "", "delegated cgroup v2 `DIR` to create the sandbox's cgroup in (default: pairbench's own)")
	f.Int64Var(&o.Limits.TmpSize, "tmp-size", 0, "size cap of /tmp in `BYTES`")
	f.BoolVarP(&verbose, "verbose", "v", false, "log every request the proxy allows, not only refusals")
	return cmd
}

// runSandboxed starts the egress proxy o allows and runs args in a sandbox.
func runSandboxed(cmd *cobra.Command, o sandbox.Manual, verbose bool, args []string) error {
	ctx := cmd.Context()
	level := slog.LevelWarn
	if verbose {
		level = slog.LevelDebug
	}
	o.Log = slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: level}))
	egress, err := o.Egress(ctx, os.Getenv)
	if err != nil {
		return usageError{err}
	}
	defer egress.Close()
	err = o.Run(ctx, egress, cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr(), args[0], args[1:]...)
	var ee *exec.ExitError
	if errors.As(err, &ee) && ctx.Err() == nil {
		fmt.Fprintf(cmd.ErrOrStderr(), "pairbench: %s exited with status %d\n", args[0], ee.ExitCode())
		return errFailure
	}
	if err != nil {
		return fmt.Errorf("sandbox run: %w", err)
	}
	return nil
}
