package main

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/grade"
	"github.com/pairbench/pairbench/intents"
	"github.com/pairbench/pairbench/runner/browser/local"
	"github.com/pairbench/pairbench/runner/toolcheck"
)

func newValidateCmd() *cobra.Command {
	var inBrowser bool
	var tempDir string
	cmd := &cobra.Command{
		Use:   "validate [DIR]",
		Short: "Check a registry's domains, tool files and intents, and grade every baseline answer",
		Long: `validate loads the registry in DIR (default: the current directory) the way
a run would, and checks everything in it:

  domains/<domain>/domain.json   known fields; every tool it names exists
  domains/<domain>/tools/*.js    evaluated in a sandboxed interpreter for their
                                 metadata: name, description, inputSchema,
                                 readOnlyHint, urlPatterns, execute
  bench/intents/<domain>/*.yaml  required fields, ids, the answer JSON Schema,
                                 rules, fixtures and placeholders, agreement,
                                 class, the entry tool (it must be registered
                                 and appear on the start URL), the baseline

Paths follow .pairbench.yml when the registry has one (see docs/registry.md).
Then it grades each intent's baseline answer, the known-correct answer, with
the intent's own schema and rules, as if an agent had given it in a fenced
JSON block: a baseline that does not grade correct is a problem.

With --browser, once the registry has no problem, it also registers every
tool file (registered in runs or not) in headless Chromium, as a treatment
trial does, and loads an example URL of each of its URL patterns and each
intent's start URL: there every tool whose patterns match must be live,
every other absent, and none may fail to register. The pages are blank stubs
served by validate under a strict Content-Security-Policy (no eval), over
http and https; the real sites are never contacted. A tool the browser does
not register is a problem at its file and line, with the browser's own
message (a file the browser cannot compile, statements that throw in a page,
a tool WebMCP refuses).

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
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 1 {
				return usageError{fmt.Errorf("validate takes at most one DIR, got %d arguments", len(args))}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := "."
			if len(args) == 1 {
				dir = args[0]
			}
			var check browserCheck
			if inBrowser {
				check = func(reg *intents.Registry) (*toolcheck.RegistryResult, error) {
					// What does not register is a problem below; the log
					// says only what went wrong with the browser itself.
					log := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: slog.LevelError}))
					return toolcheck.CheckRegistry(cmd.Context(), reg, local.Config{TempDir: tempDir, Log: log})
				}
			}
			return runValidate(dir, time.Now(), check, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	cmd.Flags().BoolVar(&inBrowser, "browser", false, "also register every tool file in headless Chromium on its URL patterns and report what is not live")
	cmd.Flags().StringVar(&tempDir, "temp-dir", "", "with --browser: where the browser's profile directory goes (default: the system's)")
	return cmd
}

// browserCheck registers a registry's tool files in a browser; nil skips it.
type browserCheck func(*intents.Registry) (*toolcheck.RegistryResult, error)

// runValidate loads and checks the registry in dir, printing every problem
// to stdout, notes to stderr, and a summary when all is well. It returns
// errFailure when it printed problems. now dates stale fixtures and resolves
// placeholders.
func runValidate(dir string, now time.Time, inBrowser browserCheck, stdout, stderr io.Writer) error {
	reg, err := intents.Load(dir)
	var probs intents.Problems
	if err != nil && !errors.As(err, &probs) {
		return fmt.Errorf("validate: %w", err)
	}
	probs = append(probs, gradeBaselines(reg, now)...)
	var browser *toolcheck.RegistryResult
	if inBrowser != nil && len(probs) == 0 {
		if browser, err = inBrowser(reg); err != nil {
			return fmt.Errorf("validate --browser: %w", err)
		}
		for _, p := range browser.Problems {
			probs = append(probs, p.Registry())
		}
	} else if inBrowser != nil {
		fmt.Fprintln(stderr, "pairbench: the tool files were not registered in Chromium: fix the problems below first")
	}
	slices.SortStableFunc(probs, func(a, b intents.Problem) int {
		return cmp.Or(cmp.Compare(a.File, b.File), cmp.Compare(a.Line, b.Line))
	})
	probs = slices.Compact(probs)

	for _, in := range reg.Intents {
		if reason, stale := intents.Stale(*in, now); stale {
			fmt.Fprintf(stderr, "%s: note: intent %s is stale and a run skips it: %s\n", in.Pos, in.ID, reason)
		}
	}
	for _, p := range probs {
		fmt.Fprintln(stdout, p)
	}
	if len(probs) > 0 {
		fmt.Fprintf(stderr, "pairbench: %s: %d %s\n", dir, len(probs), plural(len(probs), "problem", "problems"))
		return errFailure
	}
	tools, registered := 0, 0
	for _, d := range reg.Domains {
		tools += len(d.Tools)
		registered += len(d.Registered())
	}
	fmt.Fprintf(stdout, "%s: ok: %d %s, %d tools (%d registered), %d %s; every baseline answer grades correct",
		dir, len(reg.Domains), plural(len(reg.Domains), "domain", "domains"), tools, registered,
		len(reg.Intents), plural(len(reg.Intents), "intent", "intents"))
	if browser != nil {
		fmt.Fprintf(stdout, "; in Chromium every tool file is live where its URL patterns match and nowhere else (%d %s, %d %s)",
			browser.Pages, plural(browser.Pages, "page", "pages"), browser.Browsers, plural(browser.Browsers, "browser", "browsers"))
	}
	fmt.Fprintln(stdout)
	return nil
}

// gradeBaselines compiles each intent's grader and grades its baseline
// answer, resolved for a run starting now, as a fenced JSON block. A
// compile problem the loader already reported for the same file (the answer
// schema, at the intent's position) is left out.
func gradeBaselines(reg *intents.Registry, now time.Time) intents.Problems {
	var out intents.Problems
	for _, in := range reg.Intents {
		resolved, err := intents.Resolve(*in, now)
		if err != nil {
			continue // an undefined placeholder; Load reported it
		}
		g, err := grade.Compile(&resolved)
		if err != nil {
			var ps intents.Problems
			if !errors.As(err, &ps) {
				out = append(out, intents.Problem{Pos: in.Pos, Msg: err.Error()})
				continue
			}
			for _, p := range ps {
				if p.Pos == in.Pos && reg.Flawed(in.File) {
					continue
				}
				out = append(out, p)
			}
			continue
		}
		if resolved.Baseline.Answer == nil {
			continue // Load reported the missing answer
		}
		b, err := json.MarshalIndent(resolved.Baseline.Answer, "", "  ")
		if err != nil {
			out = append(out, intents.Problem{Pos: in.Baseline.Pos, Msg: fmt.Sprintf("baseline answer is not JSON: %v", err)})
			continue
		}
		res := g.Grade("```json\n" + string(b) + "\n```")
		if res.Outcome != pairbench.Correct {
			out = append(out, intents.Problem{Pos: in.Baseline.Pos, Msg: fmt.Sprintf("baseline answer grades %s: %s", res.Outcome, res.Reason)})
		}
	}
	return out
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
