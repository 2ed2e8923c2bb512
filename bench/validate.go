package bench

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/grade"
	"github.com/pairbench/pairbench/intents"
	"github.com/pairbench/pairbench/runner/browser/local"
	"github.com/pairbench/pairbench/runner/toolcheck"
)

// ValidateOptions say how far Validate checks.
type ValidateOptions struct {
	// Now dates stale fixtures and resolves placeholders.
	Now time.Time
	// Browser also registers every tool file in headless Chromium, once the
	// registry has no other problem (see toolcheck.CheckRegistry); TempDir
	// holds the browser's profile and Log hears of the browser's own
	// failures.
	Browser bool
	TempDir string
	Log     *slog.Logger
}

// Validation is what Validate found in a registry.
type Validation struct {
	Registry *intents.Registry
	// Problems are every problem, sorted by file and line, each once.
	Problems intents.Problems
	// Stale are the intents a run skips: their fixed-date fixture passed.
	Stale []StaleIntent
	// BrowserSkipped is true when the browser check was asked for but not
	// run, because of problems found before it.
	BrowserSkipped bool
	// Pages and Browsers count what the browser check loaded and opened.
	Pages, Browsers int
}

// StaleIntent is an intent a run skips, and why.
type StaleIntent struct {
	Intent *intents.Intent
	Reason string
}

// Validate loads the registry in dir as a run would and checks everything
// in it: every problem intents finds, and each intent's baseline answer
// graded by its own schema and rules as if an agent had given it (one that
// does not grade correct is a problem), then, with o.Browser, each tool
// file in a browser. The error is for a registry that cannot be read at
// all or a browser that cannot be run; problems are in the Validation.
func Validate(ctx context.Context, dir string, o ValidateOptions) (*Validation, error) {
	reg, err := intents.Load(dir)
	var probs intents.Problems
	if err != nil && !errors.As(err, &probs) {
		return nil, err
	}
	v := &Validation{Registry: reg}
	probs = append(probs, gradeBaselines(reg, o.Now)...)
	if o.Browser && len(probs) == 0 {
		log := o.Log
		if log == nil {
			log = slog.New(slog.DiscardHandler)
		}
		res, err := toolcheck.CheckRegistry(ctx, reg, local.Config{TempDir: o.TempDir, Log: log})
		if err != nil {
			return nil, fmt.Errorf("browser check: %w", err)
		}
		for _, p := range res.Problems {
			probs = append(probs, p.Registry())
		}
		v.Pages, v.Browsers = res.Pages, res.Browsers
	} else if o.Browser {
		v.BrowserSkipped = true
	}
	slices.SortStableFunc(probs, func(a, b intents.Problem) int {
		return cmp.Or(cmp.Compare(a.File, b.File), cmp.Compare(a.Line, b.Line))
	})
	v.Problems = slices.Compact(probs)
	for _, in := range reg.Intents {
		if reason, stale := intents.Stale(*in, o.Now); stale {
			v.Stale = append(v.Stale, StaleIntent{Intent: in, Reason: reason})
		}
	}
	return v, nil
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
