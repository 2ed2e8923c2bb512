package stats

import (
	"fmt"
	"strings"
)

// Looked says which look of a group-sequential design (Design) a report
// decides: a run topped up with more pairs is decided at its last look,
// at the share of α the design leaves it.
type Looked struct {
	// Pairs are the pairs per intent at each look, ascending.
	Pairs []int `json:"pairs"`
	// Look is the look decided, from 1; RunAlpha the run's α over all
	// looks (the report's Alpha is this look's share of it).
	Look     int     `json:"look"`
	RunAlpha float64 `json:"run_alpha"`
}

// note says in words at which look the report decides and at what level.
func (l *Looked) note(alpha float64) string {
	pairs := make([]string, len(l.Pairs))
	for i, n := range l.Pairs {
		pairs[i] = fmt.Sprint(n)
	}
	return fmt.Sprintf("Look %d of %d (%s pairs per intent): the run was topped up, so this look is decided at α %.3g, the share of the run's α %g the O'Brien–Fleming design leaves it after the earlier looks (docs/statistics.md, Looks).",
		l.Look, len(l.Pairs), strings.Join(pairs, ", then "), alpha, l.RunAlpha)
}
