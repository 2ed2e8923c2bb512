package runner

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"time"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/grade"
	"github.com/pairbench/pairbench/intents"
	"github.com/pairbench/pairbench/report"
	"github.com/pairbench/pairbench/rundir"
	"github.com/pairbench/pairbench/stats"
)

// PlanOptions chooses what a new run benches and how.
type PlanOptions struct {
	RunID string
	// Intents selects intents by id or by domain name; empty means every
	// intent that is not stale. A stale intent named by its id fails the
	// plan; one selected through its domain is skipped, as validate says.
	Intents []string
	// Pairs is the number of pairs per intent.
	Pairs int
	// Design is the group-sequential design the run takes its looks by
	// (docs/statistics.md, Looks), frozen in the plan as its Looks and
	// Futility; nil for a run of one look at all its pairs.
	Design   *stats.Design
	Model    rundir.Model
	Caps     rundir.PlanCaps
	Seed     uint64
	Alpha    float64
	Versions rundir.Versions
	// Now is when the run is planned; days_from_start fixtures count from it.
	Now time.Time
	// Source is where the registry was read.
	Source rundir.Source
	// Trial is frozen in the plan as its TrialSettings.
	Trial rundir.TrialSettings
	// HarnessTools are tools the agent's CLI always declares beside the
	// allowlist's, and that reach nothing outside its MCP servers (Codex's
	// MCP resource readers); they join the plan's allowlist, so the check
	// of what the agent declared stays exact.
	HarnessTools []string
	// Browser is the browser provider's policy, recorded in run.json.
	Browser *rundir.BrowserPolicy
	// WebMCP is the run's WebMCP mode (Plan.WebMCP); "" is the polyfill.
	WebMCP pairbench.WebMCPImpl
	// Arms are the arms the run compares; the zero value means
	// DefaultArms. Revs holds the registry at each revision an arm reads
	// its tools at (PlanArms.Revs), with the commit it resolved to in the
	// arm's Commit.
	Arms rundir.PlanArms
	Revs map[string]*intents.Registry
	// AgainstNone names domains whose control registers nothing even
	// though the control arm reads tools at a revision: a pull request
	// changed their intents alone (config.Comparisons).
	AgainstNone []string
	// AlsoAgainstNone names the domains benched against a revision's
	// tools that compare: both benches against no tools too, in a second
	// run (rundir.Plan.AlsoAgainstNone).
	AlsoAgainstNone []string
	// Judge is the judge a plan with judged intents freezes.
	Judge *rundir.PlanJudge
}

// Skipped is an intent a plan left out, and why.
type Skipped struct {
	Intent, Reason string
}

// NewPlan plans a run of reg: it selects the intents, fixes the tools each
// domain registers in treatment, resolves fixtures, and draws every pair's
// order (balanced within each intent, shuffled with opts.Seed). It returns
// the intents it skipped as stale. The registry must have loaded without
// problems.
func NewPlan(reg *intents.Registry, opts PlanOptions) (*rundir.Plan, []Skipped, error) {
	if opts.Pairs < 1 {
		return nil, nil, fmt.Errorf("pairs = %d; want at least 1", opts.Pairs)
	}
	selected, skipped, err := selectIntents(reg, opts.Intents, opts.Now)
	if err != nil {
		return nil, nil, err
	}
	if len(selected) == 0 {
		return nil, skipped, fmt.Errorf("no intent to run in %s", reg.Root)
	}
	p := &rundir.Plan{
		V: rundir.PlanVersion, RunID: opts.RunID, CreatedAt: opts.Now.UTC(), Versions: opts.Versions, Source: opts.Source,
		Model: opts.Model, Caps: opts.Caps, Allowlist: append(Allowlist(), opts.HarnessTools...), Seed: opts.Seed, Alpha: opts.Alpha,
		Prices: PricesVersion, Browser: opts.Browser, Trial: &opts.Trial, WebMCP: cmp.Or(opts.WebMCP, pairbench.WebMCPPolyfill),
		AlsoAgainstNone: opts.AlsoAgainstNone,
	}
	if p.Trial.PairAttempts == 0 {
		p.Trial.PairAttempts = rundir.DefaultPairAttempts
	}
	if opts.Arms != (rundir.PlanArms{}) && !opts.Arms.IsDefault() {
		arms := opts.Arms
		p.Arms = &arms
		if arms.Control.Tools == rundir.RevTools {
			p.Margins = margins(reg.Config.Margins)
		}
	}
	benched := 0
	for _, in := range selected {
		if !in.Placebo {
			benched++
		}
	}
	// A run of placebo intents alone checks the harness and claims
	// nothing: it takes no looks.
	// The plan takes the design as its size suits it (a low-powered plan's
	// looks are futility-only): run.json records what it took.
	var design *stats.Design
	if opts.Design != nil {
		d := opts.Design.ForPlan(benched, opts.Pairs, opts.Alpha)
		design = &d
	}
	if p.Looks = rundir.LookPairs(design, opts.Pairs, benched, opts.Alpha); p.Looks != nil && benched > 0 {
		p.Futility, p.FutilityPower, p.Curtail, p.FutilityOnly = design.Futility, design.FutilityPower, design.Curtail, design.FutilityOnly
	} else {
		p.Looks = nil
	}
	rng := rand.New(rand.NewPCG(opts.Seed, 0x9e3779b97f4a7c15))
	for _, in := range selected {
		d := reg.Domain(in.Domain)
		pi := rundir.PlannedIntent{
			ID: in.ID, Domain: in.Domain, Class: in.Class, Agreement: planAgreement(in.Agreement),
			Placebo: in.Placebo, Profile: d.Profile, Fixtures: intents.FixtureValues(*in, p.CreatedAt),
			Files: contentHashes(reg, in, d), Criteria: planCriteria(in.Criteria), PassAt: in.PassAt,
		}
		for _, t := range d.Registered() {
			pi.Tools = append(pi.Tools, t.Name)
		}
		if p.Arms != nil {
			arms, err := planArms(*p.Arms, opts.Revs, d, slices.Contains(opts.AgainstNone, d.Name))
			if err != nil {
				return nil, nil, fmt.Errorf("intent %s: %w", in.ID, err)
			}
			pi.Arms, pi.Tools = arms, arms.Treatment.Names()
		}
		pi.Pairs = rundir.LookOrders(p.Looks, opts.Pairs, rng)
		p.Intents = append(p.Intents, pi)
	}
	if p.Judge, err = planJudge(p, opts.Judge); err != nil {
		return nil, nil, err
	}
	if err := p.Validate(); err != nil {
		return nil, nil, err
	}
	return p, skipped, nil
}

// ErrUnknownIntent is wrapped by the error of an --intent that names no
// intent or domain of the registry: a bad argument (exit 2).
var ErrUnknownIntent = errors.New("no intent or domain")

// CheckIntentNames fails, wrapping ErrUnknownIntent, when a name of sel
// is neither an intent id nor a domain of reg.
func CheckIntentNames(reg *intents.Registry, sel []string) error {
	for _, name := range sel {
		if reg.Intent(name) == nil && reg.Domain(name) == nil {
			return fmt.Errorf("%w named %q in %s", ErrUnknownIntent, name, reg.Root)
		}
	}
	return nil
}

// selectIntents returns the intents named by sel (ids or domains), or every
// intent when sel is empty, leaving out stale ones unless named by id.
func selectIntents(reg *intents.Registry, sel []string, now time.Time) ([]*intents.Intent, []Skipped, error) {
	var out []*intents.Intent
	var skipped []Skipped
	if err := CheckIntentNames(reg, sel); err != nil {
		return nil, nil, err
	}
	for _, in := range reg.Intents {
		byID := slices.Contains(sel, in.ID)
		if len(sel) > 0 && !byID && !slices.Contains(sel, in.Domain) {
			continue
		}
		if reason, stale := intents.Stale(*in, now); stale {
			if byID {
				return nil, nil, fmt.Errorf("intent %s: %s", in.ID, reason)
			}
			skipped = append(skipped, Skipped{Intent: in.ID, Reason: reason})
			continue
		}
		out = append(out, in)
	}
	return out, skipped, nil
}

// TrialIntents prepares the plan's intents for trials: each resolved with
// the fixtures frozen at plan time, its grader compiled, and the tools its
// domain registers looked up by the names frozen in the plan.
func TrialIntents(reg *intents.Registry, p *rundir.Plan) (map[string]*TrialIntent, error) {
	return ArmTrialIntents(reg, nil, p)
}

// ArmTrialIntents is TrialIntents for a plan whose arms may register the
// tools of the registry at other revisions: revs holds the registry at
// each (PlanArms.Revs). Each arm's tools and context pack are looked up as
// the plan froze them.
func ArmTrialIntents(reg *intents.Registry, revs map[string]*intents.Registry, p *rundir.Plan) (map[string]*TrialIntent, error) {
	out := make(map[string]*TrialIntent, len(p.Intents))
	for _, pi := range p.Intents {
		in := reg.Intent(pi.ID)
		if in == nil {
			return nil, fmt.Errorf("intent %s is in the plan but not in the registry", pi.ID)
		}
		resolved, err := intents.Resolve(*in, p.CreatedAt)
		if err != nil {
			return nil, err
		}
		g, err := grade.Compile(&resolved)
		if err != nil {
			return nil, fmt.Errorf("intent %s: %w", pi.ID, err)
		}
		d := reg.Domain(pi.Domain)
		if d == nil {
			return nil, fmt.Errorf("intent %s: domain %s is not in the registry", pi.ID, pi.Domain)
		}
		ti := &TrialIntent{Intent: resolved, Grader: g, Browser: BrowserSpec{Profile: pi.Profile, Stealth: p.Browser != nil && p.Browser.Stealth}}
		if d.SignedInCheck != "" && pi.Profile != "" {
			if ti.SignedInCheck = d.Tool(d.SignedInCheck); ti.SignedInCheck == nil {
				return nil, fmt.Errorf("intent %s: signed_in_check %s is not a tool of domain %s", pi.ID, d.SignedInCheck, pi.Domain)
			}
		}
		if ti.Tools, err = armTools(p, pi, pairbench.Treatment, d, revs); err != nil {
			return nil, err
		}
		if ti.ControlTools, err = armTools(p, pi, pairbench.Control, d, revs); err != nil {
			return nil, err
		}
		if pi.Arms != nil {
			for i, arm := range pairbench.Arms {
				if pi.Arms.Of(arm).Context != "" {
					ti.Context[i], ti.Contexted = d.ContextText, true
				}
			}
		}
		out[pi.ID] = ti
	}
	return out, nil
}

// contentHashes hashes what the trials of intent in are made of: the
// intent as loaded (so an edit of a comment alone changes nothing), its
// domain's settings and each of the domain's tool files as written.
func contentHashes(reg *intents.Registry, in *intents.Intent, d *intents.Domain) map[string]string {
	rel := func(file string) string {
		if r, err := filepath.Rel(reg.Root, file); err == nil {
			return filepath.ToSlash(r)
		}
		return filepath.ToSlash(file)
	}
	asJSON := func(v any) []byte {
		b, err := json.Marshal(v)
		if err != nil { // plain data loaded from YAML and JSON: cannot happen
			panic(fmt.Sprintf("hash %T: %v", v, err))
		}
		return b
	}
	files := map[string]string{rel(in.File): contentHash(asJSON(in))}
	if d != nil {
		files[rel(d.File)] = contentHash(asJSON(d))
		for _, t := range d.Tools {
			files[t.Path] = contentHash([]byte(t.Source))
		}
		if d.Context != "" {
			files[d.ContextFile] = contentHash([]byte(d.ContextText))
		}
	}
	return files
}

// contentHash is b's content hash as the plan records it, "sha256:<hex>".
func contentHash(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// planAgreement is an intent's agreement check as the plan stores it.
func planAgreement(a *intents.Agreement) *report.Agreement {
	if a == nil {
		return nil
	}
	return &report.Agreement{Kind: a.Kind, Field: a.Field, Tolerance: a.Tolerance}
}

// planCriteria are a judged intent's criteria as the plan stores them.
func planCriteria(cs []intents.Criterion) []rundir.Criterion {
	var out []rundir.Criterion
	for _, c := range cs {
		out = append(out, rundir.Criterion{ID: c.ID, Weight: c.Weight, Description: c.Description})
	}
	return out
}
