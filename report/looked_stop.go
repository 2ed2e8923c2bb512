package report

import "fmt"

// stoppedHere says why a run stopped at a look before its last, in the
// words of the report's note: for efficacy or futility, with the reason
// (Decide); "" for a kind that stops no run early.
func stoppedHere(kind StopKind, reason string) string {
	switch kind {
	case StopEfficacy:
		return "the run, every intent with it, stopped here for efficacy: " + reason
	case StopFutility:
		return "the run, every intent with it, stopped here for futility: " + reason + " (non-binding: a resume with more pairs may go on)"
	}
	return ""
}

// StopNote says at which look of looks a run stopped before its last, and
// why, in the words of the report's note ("Look 1 of 3: the run, every
// intent with it, stopped here for futility: …."), for whoever tells of the
// stop before the report is written (the service's check run); "" for a
// run that goes on, or went through its looks.
func StopNote(look, looks int, kind StopKind, reason string) string {
	why := stoppedHere(kind, reason)
	if why == "" {
		return ""
	}
	return fmt.Sprintf("Look %d of %d: %s.", look, looks, why)
}
