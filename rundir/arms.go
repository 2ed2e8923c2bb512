package rundir

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/report"
)

// ArmTools says which tool files an arm registers.
type ArmTools string

const (
	// NoTools registers nothing.
	NoTools ArmTools = "none"
	// RegistryTools registers the registry's tools as given.
	RegistryTools ArmTools = "tools"
	// RevTools registers the tools of the registry at a git revision of its
	// repository (ArmSpec.Rev).
	RevTools ArmTools = "rev"
)

// ArmSpec is one arm's configuration, as `pairbench run --control` and
// `--treatment` write it: none, tools, tools@REV, context, tools+context or
// tools@REV+context.
type ArmSpec struct {
	Tools ArmTools `json:"tools"`
	// Rev is the git revision a RevTools arm reads its tools at, as given;
	// Commit the commit it resolved to, frozen with the plan.
	Rev    string `json:"rev,omitempty"`
	Commit string `json:"commit,omitempty"`
	// Context gives the arm's agent each domain's context pack.
	Context bool `json:"context,omitempty"`
}

// ParseArmSpec reads an arm's SPEC; the error says what SPEC may be.
func ParseArmSpec(s string) (ArmSpec, error) {
	bad := fmt.Errorf("arm %q: want none, tools, tools@REV, context, tools+context or tools@REV+context", s)
	var a ArmSpec
	parts := strings.Split(strings.TrimSpace(s), "+")
	if len(parts) > 2 {
		return a, bad
	}
	a.Tools = NoTools
	for i, p := range parts {
		switch {
		case p == "none" && len(parts) == 1:
		case p == "context" && !a.Context && (len(parts) == 1 || i == 1):
			a.Context = true
		case p == "tools" && i == 0:
			a.Tools = RegistryTools
		case strings.HasPrefix(p, "tools@") && i == 0:
			a.Tools, a.Rev = RevTools, strings.TrimPrefix(p, "tools@")
			if a.Rev == "" || strings.ContainsAny(a.Rev, " \t\n") || strings.HasPrefix(a.Rev, "-") {
				return a, fmt.Errorf("arm %q: REV must be a git revision (a branch, tag or commit)", s)
			}
		default:
			return a, bad
		}
	}
	return a, nil
}

// String writes a as a SPEC that ParseArmSpec reads back.
func (a ArmSpec) String() string {
	var parts []string
	switch a.Tools {
	case RegistryTools:
		parts = append(parts, "tools")
	case RevTools:
		parts = append(parts, "tools@"+a.Rev)
	}
	if a.Context {
		parts = append(parts, "context")
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, "+")
}

// PlanArms are the two arms a run compares.
type PlanArms struct {
	Control   ArmSpec `json:"control"`
	Treatment ArmSpec `json:"treatment"`
}

// DefaultArms is what a run compares unless told otherwise, and what a
// run.json without arms compared: no tools against the registry's tools.
var DefaultArms = PlanArms{Control: ArmSpec{Tools: NoTools}, Treatment: ArmSpec{Tools: RegistryTools}}

// Of returns the spec of arm.
func (a PlanArms) Of(arm pairbench.Arm) ArmSpec {
	if arm == pairbench.Control {
		return a.Control
	}
	return a.Treatment
}

// IsDefault reports whether a compares what every run compared before arms
// could be configured; such a plan records no arms.
func (a PlanArms) IsDefault() bool {
	return a.Control.String() == DefaultArms.Control.String() && a.Treatment.String() == DefaultArms.Treatment.String()
}

// Revs lists the revisions a's arms read tools at, in arm order, once each.
func (a PlanArms) Revs() []string {
	var revs []string
	for _, s := range []ArmSpec{a.Control, a.Treatment} {
		if s.Tools == RevTools && !slices.Contains(revs, s.Rev) {
			revs = append(revs, s.Rev)
		}
	}
	return revs
}

// IntentArms is what each arm of an intent's trials is given.
type IntentArms struct {
	Control   ArmSetup `json:"control"`
	Treatment ArmSetup `json:"treatment"`
}

// Of returns the setup of arm.
func (a *IntentArms) Of(arm pairbench.Arm) *ArmSetup {
	if arm == pairbench.Control {
		return &a.Control
	}
	return &a.Treatment
}

// ArmSetup is one arm of an intent as frozen in the plan.
type ArmSetup struct {
	// Tools are the tools the arm registers, at the arm's revision.
	Tools []ArmTool `json:"tools,omitempty"`
	// Absent is true when the intent's domain is not in the registry at
	// the arm's revision: the arm registers nothing (it is benched as
	// none).
	Absent bool `json:"absent,omitempty"`
	// None is true when the run benches the domain against no tools
	// although the arm reads tools at a revision (PlanOptions.AgainstNone:
	// a pull request changed its intents alone).
	None bool `json:"none,omitempty"`
	// Context is the path in the registry of the context pack the arm's
	// agent is given, ContextHash its content hash; both "" without one.
	Context     string `json:"context,omitempty"`
	ContextHash string `json:"context_hash,omitempty"`
}

// ArmTool is one tool an arm registers: its name, its file's slash path
// in the registry and the file's content hash ("sha256:<hex>").
type ArmTool struct {
	Name string `json:"name"`
	File string `json:"file"`
	Hash string `json:"hash"`
}

// Names returns the names of the arm's tools, in order.
func (s *ArmSetup) Names() []string {
	var out []string
	for _, t := range s.Tools {
		out = append(out, t.Name)
	}
	return out
}

// ArmSpecs returns the arms p compares: its Arms, or DefaultArms for a
// run.json that records none.
func (p *Plan) ArmSpecs() PlanArms {
	if p.Arms == nil {
		return DefaultArms
	}
	return *p.Arms
}

// armChanges lists how the arms of p and q differ, for Changes.
func armChanges(p, q *Plan) []string {
	var out []string
	pa, qa := p.ArmSpecs(), q.ArmSpecs()
	for _, arm := range pairbench.Arms {
		a, b := pa.Of(arm), qa.Of(arm)
		if a.String() != b.String() {
			out = append(out, fmt.Sprintf("%s arm: %s → %s", arm, a, b))
		} else if a.Commit != b.Commit {
			out = append(out, fmt.Sprintf("%s arm: %s is now commit %s, not %s", arm, a.Rev, shortCommit(b.Commit), shortCommit(a.Commit)))
		}
	}
	for _, a := range p.Intents {
		for _, b := range q.Intents {
			if a.ID != b.ID || a.Arms == nil || b.Arms == nil {
				continue
			}
			for _, arm := range pairbench.Arms {
				x, y := a.Arms.Of(arm), b.Arms.Of(arm)
				if !slices.Equal(x.Names(), y.Names()) {
					out = append(out, fmt.Sprintf("%s %s tools: %v → %v", a.ID, arm, x.Names(), y.Names()))
				} else if !slices.Equal(x.Tools, y.Tools) {
					out = append(out, fmt.Sprintf("%s: the %s arm's tool files changed", a.ID, arm))
				}
				if x.ContextHash != y.ContextHash {
					out = append(out, fmt.Sprintf("%s: the %s arm's context pack changed", a.ID, arm))
				}
			}
		}
	}
	return out
}

// ArmName names arm by what it is: "no tools", "main@1a2b3c4's tools",
// "this PR's tools (5d6e7f8)", "the registry's tools", each "with the
// context pack" when it has one.
func (p *Plan) ArmName(arm pairbench.Arm) string {
	spec := p.ArmSpecs().Of(arm)
	var name string
	switch spec.Tools {
	case NoTools:
		name = "no tools"
	case RevTools:
		name = fmt.Sprintf("%s@%s's tools", spec.Rev, shortCommit(spec.Commit))
	default:
		switch src := p.Source; {
		case src.PR > 0 && src.Commit != "":
			name = fmt.Sprintf("this PR's tools (%s)", shortCommit(src.Commit))
		case src.Commit != "":
			name = fmt.Sprintf("%s@%s's tools", src.Ref, shortCommit(src.Commit))
		default:
			name = "the registry's tools"
		}
	}
	if spec.Context {
		name += ", with the context pack"
	}
	return name
}

func shortCommit(c string) string {
	if len(c) > 7 {
		return c[:7]
	}
	return c
}

// statsArms names the arms for the report and says per domain how
// treatment's tools differ from control's; nil for a plan without arms.
func (p *Plan) statsArms() *report.Arms {
	if p.Arms == nil {
		return nil
	}
	out := &report.Arms{}
	for _, arm := range pairbench.Arms {
		spec := p.Arms.Of(arm)
		n := report.ArmName{Spec: spec.String(), Name: p.ArmName(arm), Tools: spec.Tools != NoTools}
		if arm == pairbench.Control {
			out.Control = n
		} else {
			out.Treatment = n
		}
	}
	seen := map[string]bool{}
	for _, in := range p.Intents {
		if in.Arms == nil || seen[in.Domain] {
			continue
		}
		seen[in.Domain] = true
		d := report.DomainArms{Domain: in.Domain, AbsentInControl: in.Arms.Control.Absent, AgainstNone: in.Arms.Control.None}
		control := map[string]ArmTool{}
		for _, t := range in.Arms.Control.Tools {
			control[t.Name] = t
		}
		for _, t := range in.Arms.Treatment.Tools {
			c, ok := control[t.Name]
			switch {
			case !ok:
				d.Added = append(d.Added, t.Name)
			case c.Hash != t.Hash || c.File != t.File:
				d.Edited = append(d.Edited, t.Name)
			}
			delete(control, t.Name)
		}
		d.Removed = slices.Sorted(maps.Keys(control))
		if !p.Arms.Control.Tools.registers() || !p.Arms.Treatment.Tools.registers() || in.Arms.Control.None {
			d.Added, d.Removed, d.Edited = nil, nil, nil // no tools on one side: nothing to compare
		}
		out.Domains = append(out.Domains, d)
	}
	slices.SortFunc(out.Domains, func(a, b report.DomainArms) int { return strings.Compare(a.Domain, b.Domain) })
	return out
}

func (t ArmTools) registers() bool { return t == RegistryTools || t == RevTools }
