package bench

import (
	"errors"

	"github.com/pairbench/pairbench/rundir"
	"github.com/pairbench/pairbench/stats"
)

// DefaultLooks is how many looks a run takes unless told (--looks): after
// a third, two thirds and all of its pairs, stats.DefaultDesign.
const DefaultLooks = 3

// MaxLooks bounds --looks: each look spends a share of α, and more looks
// than this only thin the early ones out.
const MaxLooks = 10

// Design is the group-sequential design a new run of c takes its looks
// by: Looks looks at equal fractions of the pairs, O'Brien–Fleming-type
// spending and the default non-binding futility bound; nil for one look.
// The plan leaves out a look that could reach no verdict
// (rundir.LookPairs).
func (c Config) Design() *stats.Design {
	if c.Looks <= 1 {
		return nil
	}
	d := stats.DefaultDesign()
	d.Looks = nil
	for k := 1; k <= c.Looks; k++ {
		d.Looks = append(d.Looks, float64(k)/float64(c.Looks))
	}
	d.Looks[c.Looks-1] = 1
	return &d
}

// ErrClaimed is matched by the error of a top-up refused because the run
// already claimed a difference (a *rundir.ClaimedError): a bad request
// (exit 2), as no design covers it.
var ErrClaimed = errors.New("the run already claimed a difference")

// claimedError wraps a *rundir.ClaimedError so it also matches ErrClaimed.
type claimedError struct{ *rundir.ClaimedError }

func (e claimedError) Unwrap() []error { return []error{e.ClaimedError, ErrClaimed} }

// stopOf is the look the run in dir under plan stopped at: the one
// run.json records, else the one its rows decide (a run that ended before
// it recorded its stop, a run from before runs took their looks, whose one
// look is all its pairs at the plan's α); nil while pairs of a look are
// still to run.
func stopOf(dir rundir.RunDir, plan *rundir.Plan) (*rundir.LookStop, error) {
	if plan.Stop != nil {
		return plan.Stop, nil
	}
	return dir.DecideStop(plan)
}
