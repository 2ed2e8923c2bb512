package report

// Arms names the two arms of a run whose arms were configured, by what
// they are ("main@1a2b3c4's tools", "this PR's tools (5d6e7f8)"), and says
// per domain how treatment's tools differ from control's.
type Arms struct {
	Control   ArmName `json:"control"`
	Treatment ArmName `json:"treatment"`
	// Domains lists every domain benched, by name.
	Domains []DomainArms `json:"domains,omitempty"`
}

// ArmName is one arm: its SPEC as given to pairbench run, and its name.
type ArmName struct {
	Spec string `json:"spec"`
	Name string `json:"name"`
	// Tools is true when the arm registers tools (tools, tools@REV).
	Tools bool `json:"tools"`
}

// DomainArms is how the arms' tools differ on one domain.
type DomainArms struct {
	Domain string `json:"domain"`
	// AbsentInControl is true when the domain is not in the registry at
	// the control arm's revision: it is new, and benched against none.
	AbsentInControl bool `json:"absent_in_control,omitempty"`
	// AgainstNone is true when the run benched the domain against no
	// tools although control reads tools at a revision: a pull request
	// changed its intents alone, so its tools are the same on both sides.
	AgainstNone bool `json:"against_none,omitempty"`
	// Added, Removed and Edited name the tools treatment registers and
	// control does not, control registers and treatment does not, and
	// both register from different files.
	Added   []string `json:"added,omitempty"`
	Removed []string `json:"removed,omitempty"`
	Edited  []string `json:"edited,omitempty"`
}

// ToolArmCalls counts one tool's calls and failures per arm.
type ToolArmCalls struct {
	Control   ToolCalls `json:"control"`
	Treatment ToolCalls `json:"treatment"`
}

// ToolCalls counts one tool's calls and the failures among them.
type ToolCalls struct {
	Calls    int `json:"calls"`
	Failures int `json:"failures"`
}

// armsBeforeLabels readies what arms change in the labels: a treatment
// that registers no tools (a context arm) has no adoption to be measured.
func (a *analysis) armsBeforeLabels(plan Plan, intents []Intent) {
	if plan.Arms == nil || plan.Arms.Treatment.Tools {
		return
	}
	for i := range intents {
		intents[i].Treatment.Adoption = nil
	}
}

// armsAfterLabels adds the arms to the report: their names, each tool's
// calls and failures per arm, and the non-inferiority verdicts when the
// plan has margins.
func (a *analysis) armsAfterLabels(plan Plan, rep *Report, work []intentWork, tools map[toolKey]*toolAcc) {
	if plan.Arms == nil {
		return
	}
	rep.Arms = plan.Arms
	for i := range rep.Tools {
		tf := &rep.Tools[i]
		acc := tools[toolKey{tf.Domain, tf.Tool, tf.Registered}]
		if acc == nil {
			continue
		}
		tf.PerArm = &ToolArmCalls{
			Control:   ToolCalls{Calls: acc.armCalls[0], Failures: acc.armFailures[0]},
			Treatment: ToolCalls{Calls: acc.armCalls[1], Failures: acc.armFailures[1]},
		}
	}
	if plan.Margins != nil {
		rep.NonInferiority = a.nonInferiorities(plan, rep.Intents, work)
	}
}

// NoToolsArm names the arm that registers no tools.
var NoToolsArm = ArmName{Spec: "none", Name: "no tools"}

// ControlFor is the control arm as domain had it: no tools for a domain
// benched against none (new at the control's revision, or its intents
// alone changed), else a.Control.
func (a *Arms) ControlFor(domain string) ArmName {
	for _, d := range a.Domains {
		if d.Domain == domain && (d.AbsentInControl || d.AgainstNone) {
			return NoToolsArm
		}
	}
	return a.Control
}
