package stats

import (
	"cmp"
	"slices"

	"github.com/pairbench/pairbench"
)

// armIndex is a pairbench.Arm's position in per-arm arrays.
func armIndex(a pairbench.Arm) int {
	if a == pairbench.Treatment {
		return 1
	}
	return 0
}

// slot gathers one pair's attempts.
type slot struct {
	pair int
	// last is the row index of each arm's last attempt (highest attempt
	// number, later row on a tie), -1 when the arm has none.
	last   [2]int32
	aborts [2]int
}

// complete reports whether both arms' last attempts were scored.
func (s *slot) complete(rows []pairbench.Row) bool {
	return s.last[0] >= 0 && s.last[1] >= 0 &&
		rows[s.last[0]].Outcome.Scored() && rows[s.last[1]].Outcome.Scored()
}

// intentRows is every pair-stage attempt of one intent.
type intentRows struct {
	name   string
	domain string
	slots  []slot
	index  map[int]int32 // pair number → position in slots
}

// pairRef is a complete pair: the row indices of its control and treatment
// trials.
type pairRef struct {
	c, t int32
}

// grouped is a run's rows sorted out by Build's first pass.
type grouped struct {
	intents  []*intentRows
	byName   map[string]*intentRows
	adoption map[string]*DomainAdoption
	tools    map[toolKey]*toolAcc
	attempts int
	spend    float64
	skipped  int
}

type toolKey struct {
	domain, tool string
	registered   bool
}

type toolAcc struct {
	calls, failures int
	errors          map[string]int
}

// group sorts the rows out in one pass: pair-stage attempts by intent and
// pair, adoption-stage results by domain, tool calls by tool, and the
// run's attempt count and spend. Rows that fail Validate are skipped.
func group(rows []pairbench.Row) *grouped {
	g := &grouped{
		byName:   map[string]*intentRows{},
		adoption: map[string]*DomainAdoption{},
		tools:    map[toolKey]*toolAcc{},
	}
	var cur *intentRows
	for i := range rows {
		r := &rows[i]
		if r.Validate() != nil {
			g.skipped++
			continue
		}
		g.attempts++
		g.spend += r.CostUSD
		for _, inv := range r.WebMCP {
			k := toolKey{r.Domain, inv.Tool, inv.Registered}
			acc := g.tools[k]
			if acc == nil {
				acc = &toolAcc{errors: map[string]int{}}
				g.tools[k] = acc
			}
			acc.calls++
			if inv.Status != "ok" {
				acc.failures++
				msg := inv.Error
				if msg == "" {
					msg = "(no message)"
				}
				acc.errors[msg]++
			}
		}
		if r.Stage == pairbench.StageAdoption {
			d := g.adoption[r.Domain]
			if d == nil {
				d = &DomainAdoption{Domain: r.Domain}
				g.adoption[r.Domain] = d
			}
			switch {
			case r.Outcome == pairbench.Aborted:
				d.Aborted++
			default:
				d.Trials++
				if r.Adopted {
					d.Adopted++
				}
			}
			continue
		}
		if cur == nil || cur.name != r.Intent {
			cur = g.byName[r.Intent]
			if cur == nil {
				cur = &intentRows{name: r.Intent, domain: r.Domain, index: map[int]int32{}}
				g.byName[r.Intent] = cur
				g.intents = append(g.intents, cur)
			}
		}
		k, ok := cur.index[r.Pair]
		if !ok {
			k = int32(len(cur.slots))
			cur.index[r.Pair] = k
			cur.slots = append(cur.slots, slot{pair: r.Pair, last: [2]int32{-1, -1}})
		}
		s := &cur.slots[k]
		a := armIndex(r.Arm)
		if r.Outcome == pairbench.Aborted {
			s.aborts[a]++
		}
		if s.last[a] < 0 || rows[s.last[a]].Attempt <= r.Attempt {
			s.last[a] = int32(i)
		}
	}
	for _, in := range g.intents {
		slices.SortFunc(in.slots, func(x, y slot) int { return cmp.Compare(x.pair, y.pair) })
		in.index = nil
	}
	return g
}

// pairs returns the intent's complete pairs in pair order and fills the
// pair accounting (Planned is left to the caller).
func (in *intentRows) pairs(rows []pairbench.Row, counts *PairCounts) []pairRef {
	var out []pairRef
	counts.Seen = len(in.slots)
	for i := range in.slots {
		s := &in.slots[i]
		counts.Aborts.Control += s.aborts[0]
		counts.Aborts.Treatment += s.aborts[1]
		if s.complete(rows) {
			out = append(out, pairRef{c: s.last[0], t: s.last[1]})
			continue
		}
		aborted := false
		for a := range 2 {
			if s.last[a] < 0 || !rows[s.last[a]].Outcome.Scored() {
				if a == 0 {
					counts.LeftOut.Control++
				} else {
					counts.LeftOut.Treatment++
				}
			}
			if s.last[a] >= 0 && rows[s.last[a]].Outcome == pairbench.Aborted {
				aborted = true
			}
		}
		if aborted {
			counts.LostToAborts++
		}
	}
	counts.Complete = len(out)
	return out
}
