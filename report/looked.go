package report

import (
	"fmt"
	"strings"
)

// Looked says which look of a group-sequential design (Design) a report
// decides: the look a run of looks stopped at, or the last look of a run
// topped up with more pairs, at the share of α the design leaves it.
type Looked struct {
	// Pairs are the pairs per intent at each look, ascending.
	Pairs []int `json:"pairs"`
	// Look is the look decided, from 1; RunAlpha the run's α over all
	// looks (the report's Alpha is this look's share of it).
	Look     int     `json:"look"`
	RunAlpha float64 `json:"run_alpha"`
	// Stop is why the run stopped at this look, and Reason says so in
	// words (Design.Decide); empty for a run still under way, and in a
	// report from before runs took their looks.
	Stop   StopKind `json:"stop,omitempty"`
	Reason string   `json:"reason,omitempty"`
	// Blind is set when the look is blind (stats.Design.IsBlind): it
	// spends none of the run's α and stops the run only for futility, its
	// report decided at a level no outcome of its pairs reaches.
	Blind bool `json:"blind,omitempty"`
}

// note says in words at which look the report decides, why the run
// stopped there, and at what level.
func (l *Looked) note(alpha float64) string {
	pairs := make([]string, len(l.Pairs))
	for i, n := range l.Pairs {
		pairs[i] = fmt.Sprint(n)
	}
	at := fmt.Sprintf("Look %d of %d (%s pairs per intent)", l.Look, len(l.Pairs), strings.Join(pairs, ", then "))
	level := fmt.Sprintf("this look is decided at α %.3g, its share of the run's α %g under the O'Brien–Fleming design (docs/statistics.md, Looks)", alpha, l.RunAlpha)
	if l.Blind {
		level = fmt.Sprintf("this look spends none of the run's α %g and could stop the run only for futility: it is decided at α %.3g, which no outcome of its pairs reaches (docs/statistics.md, Looks)", l.RunAlpha, alpha)
	}
	skipped := ""
	if l.Look < len(l.Pairs) {
		skipped = fmt.Sprintf("; the %d further pairs per intent the design planned were not run", l.Pairs[len(l.Pairs)-1]-l.Pairs[l.Look-1])
	}
	switch l.Stop {
	case StopEfficacy, StopFutility:
		return fmt.Sprintf("%s: %s; %s%s.", at, stoppedHere(l.Stop, l.Reason), level, skipped)
	case StopComplete:
		return fmt.Sprintf("%s: the run went on through its looks, claiming no difference before this one (a run topped up with more pairs included); %s.", at, level)
	}
	return fmt.Sprintf("%s: the run was topped up, so this look is decided at α %.3g, the share of the run's α %g the O'Brien–Fleming design leaves it after the earlier looks (docs/statistics.md, Looks).",
		at, alpha, l.RunAlpha)
}
