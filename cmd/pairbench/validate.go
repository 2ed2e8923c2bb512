package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/spf13/cobra"

	"github.com/pairbench/pairbench/bench"
)

func newValidateCmd() *cobra.Command {
	var inBrowser bool
	var tempDir string
	cmd := &cobra.Command{
		Use:   "validate [DIR]",
		Short: "Check a registry's domains, tool files and intents, and grade every baseline answer",
		Long:  longHelp("validate"),
		Args:  argCount(0, 1, "at most one DIR"),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := "."
			if len(args) == 1 {
				dir = args[0]
			}
			// What does not register is a problem; the log says only what
			// went wrong with the browser itself.
			log := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: slog.LevelError}))
			o := bench.ValidateOptions{Now: time.Now(), Browser: inBrowser, TempDir: tempDir, Log: log}
			return runValidate(cmd.Context(), dir, o, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	cmd.Flags().BoolVar(&inBrowser, "browser", false, "also register every tool file in headless Chromium on its URL patterns and report what is not live")
	cmd.Flags().StringVar(&tempDir, "temp-dir", "", "with --browser: where the browser's profile directory goes (default: the system's)")
	return cmd
}

// runValidate validates the registry in dir, printing every problem to
// stdout, notes to stderr, and a summary when all is well. It returns
// errFailure when it printed problems.
func runValidate(ctx context.Context, dir string, o bench.ValidateOptions, stdout, stderr io.Writer) error {
	v, err := bench.Validate(ctx, dir, o)
	if err != nil {
		if o.Browser {
			return fmt.Errorf("validate --browser: %w", err)
		}
		return fmt.Errorf("validate: %w", err)
	}
	if v.BrowserSkipped {
		fmt.Fprintln(stderr, "pairbench: the tool files were not registered in Chromium: fix the problems below first")
	}
	for _, s := range v.Stale {
		fmt.Fprintf(stderr, "%s: note: intent %s is stale and a run skips it: %s\n", s.Intent.Pos, s.Intent.ID, s.Reason)
	}
	for _, p := range v.Problems {
		fmt.Fprintln(stdout, p)
	}
	if len(v.Problems) > 0 {
		fmt.Fprintf(stderr, "pairbench: %s: %s\n", dir, v.ProblemCount())
		return errFailure
	}
	fmt.Fprintln(stdout, v.Summary(dir))
	return nil
}
