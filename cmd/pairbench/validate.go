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
		Long: `validate loads the registry in DIR (default: the current directory) the way
a run would, and checks everything in it: each domain.json, each tool file
(evaluated in a sandboxed interpreter for its metadata: name, description,
inputSchema, readOnlyHint, urlPatterns, execute) and each intent (fields,
ids, answer schema, rules, fixtures, entry tool, baseline), at the paths
.pairbench.yml gives (docs/registry.md). Then it grades each intent's
baseline answer, the known-correct one, with the intent's own schema and
rules: a baseline that does not grade correct is a problem.

With --browser, once the registry has no problem, it also registers every
tool file in headless Chromium, as a treatment trial does, on blank stub
pages it serves itself (strict CSP, no eval; the real sites are never
contacted) at an example URL of each URL pattern and each intent's start
URL: there every tool whose patterns match must be live, every other
absent, and none may fail to register. What the browser does not register
is a problem at its file and line, with the browser's message.

Every problem is printed as "file:line: message", sorted, and validate exits
with status 1 if there is any. An intent whose fixed-date fixture has passed
is noted on stderr but is not a problem (a run skips it).

Examples:
  # the example registry
  pairbench validate examples/registry

  # and every tool file registered in Chromium
  pairbench validate --browser examples/registry

  # the registry at the root of the current repository
  pairbench validate`,
		Args: argCount(0, 1, "at most one DIR"),
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
