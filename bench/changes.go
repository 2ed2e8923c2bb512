package bench

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/pairbench/pairbench/intents"
	"github.com/pairbench/pairbench/runner"
)

// ErrNothingChanged is returned (wrapped) by a bench of Config.Changes
// when nothing of any domain changed: there is nothing to bench.
var ErrNothingChanged = errors.New("nothing to bench")

// applyChanges turns Config.Changes into the run's arms and selection:
// the domains that changed since the base revision (intents.Comparisons),
// benched against their tools at the base, a new domain (one the base does
// not have) or one whose intents alone changed against no tools. It
// returns the arms and the domains benched against none. A registry read
// from git (Config.Git, at head) has the changes a pull request shows:
// those of head since its merge base with the base revision.
func (r *Run) applyChanges(ctx context.Context, reg *intents.Registry, head runner.Source) (runner.PlanArms, []string, error) {
	base := r.cfg.Changes
	if r.cfg.Arms != (runner.PlanArms{}) || len(r.cfg.Intents) > 0 {
		return runner.PlanArms{}, nil, errors.New("--changes chooses the arms and the intents from the diff; give no --control, --treatment, --against or --intent with it")
	}
	arms := runner.PlanArms{Control: runner.ArmSpec{Tools: runner.RevTools, Rev: base}, Treatment: runner.ArmSpec{Tools: runner.RegistryTools}}
	revs, read, err := r.readRevs(ctx, arms)
	if err != nil {
		return runner.PlanArms{}, nil, err
	}
	var changed []string
	if g := r.cfg.Git; g != nil {
		changed, err = runner.GitChangedSince(ctx, g.Cache, read.Control.Commit, head.Commit, r.cfg.Registry)
	} else {
		changed, err = runner.GitChangedFiles(ctx, r.cfg.Registry, base)
	}
	if err != nil {
		return runner.PlanArms{}, nil, err
	}
	var none []string
	for _, c := range intents.Comparisons(reg.Config, changed, revs[base].Has) {
		if reg.Domain(c.Domain) == nil || !hasIntents(reg, c.Domain) {
			continue // a domain removed, or one without intents: nothing to bench
		}
		r.cfg.Intents = append(r.cfg.Intents, c.Domain)
		switch {
		case !c.New && !slices.Contains(c.Against, intents.AgainstBase):
			none = append(none, c.Domain)
		case len(c.Against) > 1:
			r.problem(runner.Problem{Msg: "compare: both: this run benches the domain against base; bench it against no tools in a run of its own",
				Attrs: []any{"domain", c.Domain, "command", "pairbench run " + r.cfg.Registry + " --intent " + c.Domain}})
		}
	}
	if len(r.cfg.Intents) == 0 {
		return runner.PlanArms{}, nil, fmt.Errorf("%w: no domain of %s changed since %s", ErrNothingChanged, r.cfg.Registry, base)
	}
	r.log.Info("benching the changes", "since", base, "domains", r.cfg.Intents, "against_none", none)
	return arms, none, nil
}

func hasIntents(reg *intents.Registry, domain string) bool {
	return slices.ContainsFunc(reg.Intents, func(in *intents.Intent) bool { return in.Domain == domain })
}
