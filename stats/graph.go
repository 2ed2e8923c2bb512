package stats

// GraphLevels runs the pooled part of the procedure: the pooled speed and
// accuracy tests' p values give the levels each was decided at, whether it
// rejected, and the intents' family's level.
func GraphLevels(pS, pA, alpha float64) (lvS, lvA, lvF float64, rejS, rejA bool) {
	lvS, lvA, lvF = alpha/3, alpha/3, alpha/3
	for changed := true; changed; {
		changed = false
		if !rejS && pS <= lvS {
			rejS, changed = true, true
			if rejA {
				lvF += lvS
			} else {
				lvA, lvF = lvA+lvS/2, lvF+lvS/2
			}
		}
		if !rejA && pA <= lvA {
			rejA, changed = true, true
			if rejS {
				lvF += lvA
			} else {
				lvS, lvF = lvS+lvA/2, lvF+lvA/2
			}
		}
	}
	return lvS, lvA, lvF, rejS, rejA
}

// intersect is the p of a claim that needs two tests to reject in the same
// direction (an intersection–union test): the larger p when they agree,
// else 1.
func intersect(p1 float64, faster1 bool, p2 float64, faster2 bool) float64 {
	if faster1 != faster2 {
		return 1
	}
	return max(p1, p2)
}

// SpeedClaimP is the p of a speed claim from the test over both-correct
// pairs (pCond, leaning faster or not) and the composite test on time to a
// correct answer (pComp), with b and c the pairs only treatment and only
// control got right. A claim that leans against the accuracy difference
// (slower while treatment won more discordant pairs, or faster while it
// lost more) is the one survivorship can fake: the arm that fails more
// drops its slowest trials from the both-correct pairs. Such a claim needs
// the composite test too, in the same direction. The p is never below pCond,
// so the claim is never easier than the test over both-correct pairs.
func SpeedClaimP(pCond float64, condFaster bool, pComp float64, compFaster bool, b, c int) float64 {
	if against := (condFaster && b < c) || (!condFaster && b > c); !against {
		return pCond
	}
	return intersect(pCond, condFaster, pComp, compFaster)
}
