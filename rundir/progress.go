package rundir

import (
	"fmt"
	"time"
)

// Progress is how far an execution of a run is: what the engine hands its
// progress hook, and what the displays and the service show of it.
type Progress struct {
	// Started is when the execution started.
	Started time.Time
	// Pairs is how many pairs the execution has to finish and Done how
	// many are, counting rows earlier runners recorded; Half is how many are
	// halfway (see Tally). In a run of looks these are the pairs in force:
	// those of the look under way, which the run finishes before it
	// decides whether to go on; Planned counts the pairs of every look.
	Pairs, Done, Half int
	Planned           int
	// Look is the look under way, from 1, of Looks (1 for a run of one
	// look); 0 before the pairs start (the adoption stage).
	Look, Looks int
	// Stop is the look the run stopped at, once one decided it: for
	// efficacy or futility before its last look (the pairs past it never
	// run), or complete at its last. Nil while the run goes on, and in a
	// shard that takes no look (merge does).
	Stop *LookStop
	// Running is how many trials run now.
	Running int
	// Trials and Aborts count the trials this execution recorded; Spend is
	// their cost in USD, or in the scripted model's notional prices when
	// Notional is set: then no money was spent.
	Trials, Aborts int
	Spend          float64
	Notional       bool
}

// LookUnderWay says which look of a run of looks is under way, of how
// many, and the pairs planned in all ("look 1 of 3, 24 planned"), as the
// CLI's progress and the service's check run both show it; "" before the
// pairs start or in a run of one look.
func LookUnderWay(look, looks, planned int) string {
	if look <= 0 || looks <= 1 {
		return ""
	}
	return fmt.Sprintf("look %d of %d, %d planned", look, looks, planned)
}
