package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/pairbench/pairbench/rundir"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/browser/local"
	"github.com/pairbench/pairbench/browser/toolcheck"
	"github.com/pairbench/pairbench/runner"
	"github.com/pairbench/pairbench/sandbox"
)

// Smoke passes the smoke gate, then freezes the plan. The gate checks,
// before any pair, that a trial can work at all: the sandbox is sound and
// hides the bench's own files, the plan fits the budget at its caps, a
// zero-tool agent run answers at a cost above zero, and the treatment
// setup of every intent works: in one browser (unless two domains' tools
// could meet on a page), each start page shows its entry tool live and no
// registered tool failed to register there (browser/toolcheck); a run with
// judged intents' judge gives a verdict (runner.SmokeJudge). A run
// resumed from its own run.json has passed it already and goes straight on; a new run freezes run.json only
// once the gate passed, so a failed gate leaves no plan. The error says
// which check failed.
func (r *Run) Smoke(ctx context.Context) error {
	if r.fresh || r.adopted {
		r.step(Step{Name: StepSmokeGate})
		if err := r.smokeGate(ctx); err != nil {
			return fmt.Errorf("smoke gate: %w", err)
		}
	}
	if r.fresh {
		r.step(Step{Name: StepFreezing})
		if err := r.dir.WritePlan(r.plan); err != nil {
			return err
		}
		r.step(Step{Name: StepFrozen})
	}
	if r.smokeCost > 0 {
		// Its cost counts in the run's budget, on every resume.
		if err := r.dir.RecordSpend(r.cfg.Shard, rundir.Spend{At: time.Now().UTC(), What: "smoke gate", CostUSD: r.smokeCost}); err != nil {
			return err
		}
	}
	r.smoked = true
	return nil
}

// CheckHost runs the smoke gate's checks of this host: the sandbox's
// self-check (sandbox.Check) with hidden out of its sight and its
// directories under tempDir ("" for the system's), then, with browser, the
// trial browser's confinement (local.Check). pairbench sandbox check runs
// it as the smoke gate does. The error of a check that failed is a
// *sandbox.CheckError saying why.
func CheckHost(ctx context.Context, hidden []string, tempDir, chromium string, browser bool) (sandbox.CheckReport, error) {
	rep, err := sandbox.Check(ctx, sandbox.CheckOptions{Hidden: hidden, TempRoot: tempDir})
	if err != nil || !browser {
		return rep, err
	}
	// The check's browser probes its own confinement (a refused loopback
	// request is the point): its egress's records are no news, and what
	// fails comes back as the error.
	return rep, local.Check(ctx, local.Config{ChromiumPath: chromium, TempDir: tempDir, Log: slog.New(slog.DiscardHandler)})
}

func (r *Run) smokeGate(ctx context.Context) error {
	rep, err := CheckHost(ctx, r.hidden(), r.cfg.TempDir, r.cfg.Chromium, !r.cfg.Browser.remote())
	if err != nil {
		return err
	}
	r.log.Info("sandbox check passed", "limits", rep.Limits, "devices", rep.Devices)
	if err := r.checkProfiles(ctx); err != nil {
		return err
	}
	spent, err := r.dir.ReadSpend(r.cfg.Shard) // an earlier smoke gate of this runner's share
	if err != nil {
		return err
	}
	if err := runner.CheckBudget(r.cfg.Budget, r.plannedTrials(), r.cfg.Slots, runner.BudgetCaps(r.plan), spent); err != nil {
		return err
	}
	if r.smokeCost, err = runner.SmokeAgent(ctx, r.trials.Agent, r.plan.Model, r.cfg.TempDir, r.harness...); err != nil {
		return err
	}
	if err := r.smokeJudge(ctx); err != nil {
		return err
	}
	// The smoke run's own cost counts too: the trials must still fit.
	if err := runner.CheckBudget(r.cfg.Budget, r.plannedTrials(), r.cfg.Slots, runner.BudgetCaps(r.plan), spent+r.smokeCost); err != nil {
		return err
	}
	// Every domain and entry tool of the plan, not only the first intent's:
	// a domain whose tools cannot register would abort each of its pairs.
	tis := make([]*runner.TrialIntent, 0, len(r.plan.Intents))
	for _, in := range r.plan.Intents {
		tis = append(tis, r.trials.Intents[in.ID])
	}
	// Both arms' setups: each arm that registers tools has them checked.
	for _, arm := range pairbench.Arms {
		view := armView(tis, arm)
		if len(view) == 0 {
			continue
		}
		if err := toolcheck.Treatment(ctx, r.log, r.trials.Browsers, view); err != nil {
			if r.plan.Arms == nil {
				return fmt.Errorf("%s setup: %w", arm, err)
			}
			return fmt.Errorf("%s setup (%s): %w", arm, r.plan.ArmSpecs().Of(arm), err)
		}
	}
	if err := r.checkToolFree(ctx, tis); err != nil {
		return err
	}
	return r.checkSignedIn(ctx, tis)
}

// checkProfiles asks the browsers for each signed-in domain's profile. A
// domain whose profile is missing is left out of a fresh plan, with a
// problem saying so, unless the run names it (an intent id or the domain in
// Config.Intents) or its plan is frozen already: then the run stops.
func (r *Run) checkProfiles(ctx context.Context) error {
	missing := map[string]string{} // domain -> profile
	for _, in := range r.plan.Intents {
		if in.Profile == "" {
			continue
		}
		if _, seen := missing[in.Domain]; seen {
			continue
		}
		has, err := r.trials.Browsers.HasProfile(ctx, in.Profile)
		if err != nil {
			return err
		}
		if !has {
			missing[in.Domain] = in.Profile
		}
	}
	if len(missing) == 0 {
		return nil
	}
	provider := cmp.Or(r.cfg.Browser.Provider, BrowserLocal)
	kept := r.plan.Intents[:0:0]
	for _, in := range r.plan.Intents {
		profile, gone := missing[in.Domain]
		if !gone {
			kept = append(kept, in)
			continue
		}
		if !r.fresh || slices.Contains(r.cfg.Intents, in.ID) || slices.Contains(r.cfg.Intents, in.Domain) {
			return fmt.Errorf("intent %s: the %s browsers have no profile %q, which domain %s signs in with", in.ID, provider, profile, in.Domain)
		}
		r.problem(rundir.Problem{Msg: "intent skipped: the browsers have no profile for its domain",
			Attrs: []any{"intent", in.ID, "domain", in.Domain, "profile", profile, "browser", provider}})
	}
	if len(kept) == 0 {
		return errors.New("every intent's domain signs in with a profile the browsers do not have")
	}
	r.plan.Intents = kept
	return nil
}

// checkSignedIn runs, for each domain with a signed_in_check, a control
// setup of its first intent with the check: a profile whose session has
// lapsed stops the run before its first trial, as it would abort every
// pair of the domain.
func (r *Run) checkSignedIn(ctx context.Context, tis []*runner.TrialIntent) error {
	seen := map[string]bool{}
	for _, ti := range tis {
		d := ti.Intent.Domain
		if ti.SignedInCheck == nil || seen[d] {
			continue
		}
		seen[d] = true
		setup, err := runner.SetUpBrowser(ctx, r.log, r.trials.Browsers, runner.SetupSpec{Arm: pairbench.Control,
			StartURL: ti.Intent.StartURL, Browser: ti.Browser, SignedInCheck: ti.SignedInCheck})
		if err != nil {
			return fmt.Errorf("signed-in check of %s (profile %s): %w", d, ti.Browser.Profile, err)
		}
		setup.Browser.Close(ctx)
		r.log.Info("smoke gate: signed in", "domain", d, "profile", ti.Browser.Profile, "check", ti.SignedInCheck.Name)
	}
	return nil
}

// hidden lists what the sandbox must not see: the runs directory, the
// registry's directory (a registry read from git is in memory) and the git
// cache.
func (r *Run) hidden() []string {
	hidden := []string{r.cfg.RunsDir}
	if r.cfg.Git == nil {
		hidden = append(hidden, r.cfg.Registry)
	} else if r.cfg.Git.Cache != "" {
		hidden = append(hidden, r.cfg.Git.Cache)
	}
	return hidden
}

// plannedTrials counts the trials this runner's share of the plan holds:
// two per pair of its shard, and the adoption trials.
func (r *Run) plannedTrials() int {
	pairs, err := r.execution().Pairs()
	if err != nil {
		return 0
	}
	domains := map[string]bool{}
	for _, in := range r.plan.Intents {
		domains[in.Domain] = true
	}
	return 2*len(pairs) + r.plan.AdoptionTrials()*len(domains)
}
