package bench

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/pairbench/pairbench/rundir"

	"github.com/pairbench/pairbench/intents"
	"github.com/pairbench/pairbench/intents/config"
	"github.com/pairbench/pairbench/runner"
)

// ErrNothingChanged is returned (wrapped) by a bench of Config.Changes
// when nothing of any domain changed: there is nothing to bench.
var ErrNothingChanged = errors.New("nothing to bench")

// applyChanges turns Config.Changes into the run's arms and selection:
// the domains that changed since the base revision (config.Comparisons),
// benched against their tools at the base, a new domain (one the base does
// not have) or one whose intents alone changed against no tools. It
// returns the arms and the domains benched against none. A registry read
// from git (Config.Git, at head) has the changes a pull request shows:
// those of head since its merge base with the base revision.
//
// With Config.Intents (named intents or domains, a /bench run INTENT …)
// the diff chooses the comparison of each named one's domain the same way
// and selects nothing more: a named intent whose domain's tools did not
// change is benched against no tools.
func (r *Run) applyChanges(ctx context.Context, reg *intents.Registry, head rundir.Source) (rundir.PlanArms, []string, error) {
	base := r.cfg.Changes
	if r.cfg.Arms != (rundir.PlanArms{}) {
		return rundir.PlanArms{}, nil, errors.New("--changes chooses the arms from the diff; give no --control, --treatment or --against with it")
	}
	arms := rundir.PlanArms{Control: rundir.ArmSpec{Tools: rundir.RevTools, Rev: base}, Treatment: rundir.ArmSpec{Tools: rundir.RegistryTools}}
	revs, read, err := r.readRevs(ctx, arms)
	if err != nil {
		return rundir.PlanArms{}, nil, err
	}
	var changed []string
	if g := r.cfg.Git; g != nil {
		changed, err = runner.GitChangedSince(ctx, g.Cache, read.Control.Commit, head.Commit, r.cfg.Registry)
	} else {
		changed, err = runner.GitChangedFiles(ctx, r.cfg.Registry, base)
	}
	if err != nil {
		return rundir.PlanArms{}, nil, err
	}
	againstBase, both := map[string]bool{}, map[string]bool{}
	var benched, none []string
	for _, c := range config.Comparisons(reg.Config, changed, revs[base].Has) {
		if reg.Domain(c.Domain) == nil || !hasIntents(reg, c.Domain) {
			continue // a domain removed, or one without intents: nothing to bench
		}
		benched = append(benched, c.Domain)
		switch {
		case c.New || !slices.Contains(c.Against, config.AgainstBase):
			none = append(none, c.Domain)
		default:
			againstBase[c.Domain] = true
			both[c.Domain] = len(c.Against) > 1
		}
	}
	if named := r.cfg.Intents; len(named) > 0 {
		none = nil
		for _, d := range namedDomains(reg, named) {
			if !againstBase[d] {
				none = append(none, d)
			}
		}
		for _, n := range named { // compare: both: the named ones, against no tools too
			if d := namedDomains(reg, []string{n}); len(d) == 1 {
				r.askBoth(n, both[d[0]])
			}
		}
		r.log.Info("benching named intents as the changes choose", "since", base, "intents", named, "against_none", none)
		return arms, none, nil
	}
	if len(benched) == 0 {
		return rundir.PlanArms{}, nil, fmt.Errorf("%w: no domain of %s changed since %s", ErrNothingChanged, r.cfg.Registry, base)
	}
	r.cfg.Intents = benched
	for _, d := range benched {
		r.askBoth(d, both[d])
	}
	r.log.Info("benching the changes", "since", base, "domains", benched, "against_none", none)
	return arms, none, nil
}

// askBoth notes a domain (or a named intent of one) benched against base
// whose configuration asks for both comparisons (compare: both): Bench
// benches it against no tools too, in a run of its own
// (config.AgainstNoneRunID), planned, sharded or run whole as this one
// is, and the plan records it (rundir.Plan.AlsoAgainstNone) for merge.
func (r *Run) askBoth(domain string, both bool) {
	if both {
		r.alsoNone = append(r.alsoNone, domain)
	}
}

// namedDomains returns the domains of names (intent ids or domains), each
// once, in the order first named; a name that is neither is left to the
// plan to refuse.
func namedDomains(reg *intents.Registry, names []string) []string {
	var out []string
	for _, n := range names {
		d := ""
		if reg.Domain(n) != nil {
			d = n
		} else if i := slices.IndexFunc(reg.Intents, func(in *intents.Intent) bool { return in.ID == n }); i >= 0 {
			d = reg.Intents[i].Domain
		}
		if d != "" && !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	return out
}

func hasIntents(reg *intents.Registry, domain string) bool {
	return slices.ContainsFunc(reg.Intents, func(in *intents.Intent) bool { return in.Domain == domain })
}
