package rundir

import (
	"cmp"

	"github.com/pairbench/pairbench"
)

// WebMCPMode is the run's WebMCP mode: Plan.WebMCP, or the polyfill for a
// run.json written before runs recorded it (they all ran the polyfill).
func (p *Plan) WebMCPMode() pairbench.WebMCPImpl {
	return cmp.Or(p.WebMCP, pairbench.WebMCPPolyfill)
}
