package bench

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/pairbench/pairbench/artifacts"

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

// ErrNothingToResume is matched by the error of a bench told to resume
// (Config.Resume) a run that is neither in its run directory nor in the
// store: a bad request (exit 2), since planning it afresh would pass for a
// resume.
var ErrNothingToResume = errors.New("nothing to resume")

// storedStop is stopOf for a run whose rows are in store, not in the run
// directory (a --plan-only runner's): the look its stored rows decide,
// those of the run or of every shard of it, fetched without their trial
// directories; nil when the store holds no rows of it yet.
func storedStop(ctx context.Context, store artifacts.Store, plan *rundir.Plan) (*rundir.LookStop, error) {
	if plan.Stop != nil {
		return plan.Stop, nil
	}
	tmp, err := os.MkdirTemp("", "pairbench-stop-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	dir := rundir.RunDir{Path: tmp}
	if _, _, err := dir.Fetch(ctx, store, plan.RunID, false); errors.Is(err, rundir.ErrNoRows) {
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("where run %s stopped: %w", plan.RunID, err)
	}
	return dir.DecideStop(plan)
}
