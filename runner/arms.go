package runner

import (
	"fmt"
	"strings"

	"github.com/pairbench/pairbench/rundir"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/intents"
	"github.com/pairbench/pairbench/intents/config"
	"github.com/pairbench/pairbench/report"
)

// planArms fills in's arms from the specs: the tools each registers (the
// domain's at head, or at the arm's revision in revs), and the context
// pack it is given. It fails when an arm asks for a context pack that d
// does not name. againstNone leaves control without tools.
func planArms(arms rundir.PlanArms, revs map[string]*intents.Registry, d *intents.Domain, againstNone bool) (*rundir.IntentArms, error) {
	out := &rundir.IntentArms{}
	for _, arm := range pairbench.Arms {
		spec, setup := arms.Of(arm), out.Of(arm)
		var tools []intents.Tool
		switch {
		case arm == pairbench.Control && againstNone && spec.Tools == rundir.RevTools:
			setup.None = true
		case spec.Tools == rundir.RegistryTools:
			tools = d.Registered()
		case spec.Tools == rundir.RevTools:
			reg := revs[spec.Rev]
			if reg == nil {
				return nil, fmt.Errorf("%s arm: the registry at %s was not read", arm, spec.Rev)
			}
			if at := reg.Domain(d.Name); at != nil {
				tools = at.Registered()
			} else {
				setup.Absent = true
			}
		}
		for _, t := range tools {
			setup.Tools = append(setup.Tools, rundir.ArmTool{Name: t.Name, File: t.Path, Hash: contentHash([]byte(t.Source))})
		}
		if spec.Context {
			if d.Context == "" {
				return nil, fmt.Errorf("%s arm %s: domain %s names no context pack (domain.json \"context\"; docs/registry.md)", arm, spec, d.Name)
			}
			setup.Context, setup.ContextHash = d.ContextFile, contentHash([]byte(d.ContextText))
		}
	}
	return out, nil
}

// armTools returns the tools arm registers for the planned intent pi of
// domain d, looked up by the names frozen in the plan: in the registry as
// given, or at the arm's revision in revs.
func armTools(p *rundir.Plan, pi rundir.PlannedIntent, arm pairbench.Arm, d *intents.Domain, revs map[string]*intents.Registry) ([]intents.Tool, error) {
	names := pi.Tools
	if arm == pairbench.Control {
		names = nil
	}
	spec := p.ArmSpecs().Of(arm)
	if pi.Arms != nil {
		names = pi.Arms.Of(arm).Names()
	}
	if spec.Tools == rundir.RevTools && len(names) > 0 {
		reg := revs[spec.Rev]
		if reg == nil {
			return nil, fmt.Errorf("intent %s: the registry at %s (the %s arm's tools) was not read", pi.ID, spec.Rev, arm)
		}
		if d = reg.Domain(pi.Domain); d == nil {
			return nil, fmt.Errorf("intent %s: domain %s is in the plan's %s arm but not in the registry at %s", pi.ID, pi.Domain, arm, spec.Rev)
		}
	}
	var out []intents.Tool
	for _, name := range names {
		t := d.Tool(name)
		if t == nil {
			return nil, fmt.Errorf("intent %s: tool %s is in the plan's %s arm but not in domain %s", pi.ID, name, arm, pi.Domain)
		}
		out = append(out, *t)
	}
	return out, nil
}

// ArmTools returns the tools arm registers.
func (ti *TrialIntent) ArmTools(arm pairbench.Arm) []intents.Tool {
	if arm == pairbench.Control {
		return ti.ControlTools
	}
	return ti.Tools
}

// ArmPrompt returns the user prompt arm's agent is given: the intent's
// prompt, after the context block when an arm of the run has context. The
// block stands in the same place in both arms, the arm without context
// holding it empty, so that only the pack's content differs between them.
func (ti *TrialIntent) ArmPrompt(arm pairbench.Arm) string {
	if !ti.Contexted {
		return ti.Intent.Prompt
	}
	text := ti.Context[0]
	if arm == pairbench.Treatment {
		text = ti.Context[1]
	}
	return ContextBlock(text) + ti.Intent.Prompt
}

// ContextBlock is how a context pack opens the user prompt of an arm (empty
// in the other arm of a run with context).
func ContextBlock(text string) string {
	text = strings.TrimSpace(text)
	if text != "" {
		text += "\n"
	}
	return "Notes on this site from its maintainers (they may be empty):\n<site-notes>\n" + text + "</site-notes>\n\n"
}

// margins returns the registry's margins with the defaults in place of
// what it leaves out.
func margins(m config.Margins) *report.Margins {
	out := report.DefaultMargins
	if m.AccuracyPoints > 0 {
		out.AccuracyPoints = m.AccuracyPoints
	}
	if m.SlowerPercent > 0 {
		out.SlowerPercent = m.SlowerPercent
	}
	return &out
}
