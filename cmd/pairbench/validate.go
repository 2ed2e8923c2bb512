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
	var inBrowser, onSite bool
	var tempDir string
	site := defaultBenchOptions()
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
			if !onSite {
				return runValidate(cmd.Context(), dir, o, cmd.OutOrStdout(), cmd.ErrOrStderr())
			}
			site.Registry, site.TempDir, site.Log = dir, tempDir, log
			if err := site.finish(); err != nil {
				return usageError{err}
			}
			return validateSite(cmd.Context(), dir, o, site.Config, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	cmd.Flags().BoolVar(&onSite, "site", false, "also play each intent's baseline once against its site (the scripted model in both arms, one pair) and report an arm that does not grade correct")
	siteFlags(cmd, &site)
	f := cmd.Flags()
	f.StringSliceVar(&site.Intents, "intent", nil, "with --site: the intent ids or domains to play (default: every intent whose fixtures are not stale)")
	f.BoolVar(&site.ExampleSites, "example-sites", false, "with --site: serve pairbench's example sites on loopback (books.example, weather.example)")
	f.StringVar(&site.Tools, "tools", "", "with --site: node_modules directory of the pinned Node tools (default: as run's --tools)")
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
	if v.Registry != nil {
		for _, d := range v.Registry.Untested() {
			tools := fmt.Sprintf("%d tools", len(d.Tools))
			if len(d.Tools) == 1 {
				tools = "1 tool"
			}
			fmt.Fprintf(stderr, "%s: note: domain %s has %s and no intents: a run benches none of its tools (intents are %s/%s/<id>.yaml)\n",
				d.File, d.Name, tools, v.Registry.Config.Paths.Intents, d.Name)
		}
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

// validateSite validates the registry in dir as runValidate does and, when
// it has no problem, plays its baselines against the site
// (bench.ValidateSite).
func validateSite(ctx context.Context, dir string, o bench.ValidateOptions, cfg bench.Config, stdout, stderr io.Writer) error {
	v, err := bench.Validate(ctx, dir, o)
	if err != nil {
		return fmt.Errorf("validate: %w", err)
	}
	if len(v.Problems) > 0 {
		fmt.Fprintln(stderr, "pairbench: the baselines were not played against the site: fix the problems below first")
		return runValidate(ctx, dir, o, stdout, stderr)
	}
	ps, err := bench.ValidateSite(ctx, cfg, v.Registry)
	if err != nil {
		return fmt.Errorf("validate --site: %w", err)
	}
	for _, p := range ps {
		fmt.Fprintln(stdout, p)
	}
	if len(ps) > 0 {
		count := fmt.Sprintf("%d problems", len(ps))
		if len(ps) == 1 {
			count = "1 problem"
		}
		fmt.Fprintf(stderr, "pairbench: %s: %s against the site\n", dir, count)
		return errFailure
	}
	fmt.Fprintln(stdout, v.Summary(dir)+"; every baseline holds on the site")
	return nil
}
