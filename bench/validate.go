package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/pairbench/pairbench/browser/local"
	"github.com/pairbench/pairbench/browser/toolcheck"
	"github.com/pairbench/pairbench/grade"
	"github.com/pairbench/pairbench/intents"
	"github.com/pairbench/pairbench/runner"
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
	// run, because of problems found before it; BrowserChecked when it ran.
	BrowserSkipped, BrowserChecked bool
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
//
// Validate returns ctx's error as soon as ctx ends, even while a file is
// being read or a tool file evaluated: a registry on a slow or hung file
// system never holds its caller past a signal.
func Validate(ctx context.Context, dir string, o ValidateOptions) (*Validation, error) {
	type loaded struct {
		reg   *intents.Registry
		probs intents.Problems
		err   error
	}
	done := make(chan loaded, 1)
	go func() {
		var l loaded
		l.reg, l.err = intents.Load(dir)
		if l.err != nil && !errors.As(l.err, &l.probs) {
			done <- l
			return
		}
		l.err = nil
		l.probs = append(l.probs, grade.CheckBaselines(l.reg, o.Now)...)
		l.probs = append(l.probs, runner.CheckBaselineSteps(l.reg)...)
		done <- l
	}()
	var l loaded
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case l = <-done:
	}
	if l.err != nil {
		return nil, l.err
	}
	reg, probs := l.reg, l.probs
	v := &Validation{Registry: reg}
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
		v.Pages, v.Browsers, v.BrowserChecked = res.Pages, res.Browsers, true
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

// Summary is validate's line for the registry in dir when it has no
// problem: what it holds, that every baseline grades correct and, when the
// browser check ran, what it loaded.
func (v *Validation) Summary(dir string) string {
	reg := v.Registry
	tools, registered := 0, 0
	for _, d := range reg.Domains {
		tools += len(d.Tools)
		registered += len(d.Registered())
	}
	s := fmt.Sprintf("%s: ok: %d %s, %d tools (%d registered), %d %s; every baseline answer grades correct",
		dir, len(reg.Domains), plural(len(reg.Domains), "domain", "domains"), tools, registered,
		len(reg.Intents), plural(len(reg.Intents), "intent", "intents"))
	if v.BrowserChecked {
		s += fmt.Sprintf("; in Chromium every tool file is live where its URL patterns match and nowhere else (%d %s, %d %s)",
			v.Pages, plural(v.Pages, "page", "pages"), v.Browsers, plural(v.Browsers, "browser", "browsers"))
	}
	return s
}

// ProblemCount says how many problems v found: "1 problem", "3 problems".
func (v *Validation) ProblemCount() string {
	n := len(v.Problems)
	return fmt.Sprintf("%d %s", n, plural(n, "problem", "problems"))
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
