package report

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/pairbench/pairbench"
)

// record is what the statistics keep of one attempt: a few numbers instead
// of the whole row, so that a run of millions of rows fits in little memory.
// It holds no pointer, so the garbage collector never reads the records;
// the rare parts are a recordExtra beside it.
type record struct {
	wall, cost  float64
	inputTokens int64
	startDelay  int64
	pair        int32
	attempt     int32
	turns       int32
	oc          uint8 // the outcome's index in pairbench.Outcomes
	flags       recordFlags
	// startup is the agent's start-up inside wall (Row.StartupSeconds).
	startup float32
}

type recordFlags uint16

const (
	flagAdopted recordFlags = 1 << iota
	// flagToolless: at most one turn and no WebMCP call.
	flagToolless
	flagBA
	flagCapTime
	flagCapTurns
	flagCapSpend
	// flagRefused: the trial's browser egress refused a request.
	flagRefused
	// flagNative and flagPolyfill: the start page had the browser's own
	// WebMCP, or the polyfill (neither: not recorded).
	flagNative
	flagPolyfill
)

// recordExtra holds the rare parts of an attempt: native tools, caps other
// than the known three, and the answer an agreement check compares. A nil
// *recordExtra has none.
type recordExtra struct {
	nativeTools []string
	caps        []pairbench.Cap // caps other than time, turns and spend
	// answerAt is the extracted answer at the agreement check's field, and
	// hasAnswer whether it was there.
	answerAt  any
	hasAnswer bool
	// judge is the trial's judgement, for a judged intent (score.go).
	judge *judgeNote
}

func (t *record) is(f recordFlags) bool { return t.flags&f != 0 }
func (t *record) correct() bool         { return t.outcome() == pairbench.Correct }

func (t *record) outcome() pairbench.Outcome { return pairbench.Outcomes[t.oc] }

func (t *record) order() pairbench.Order {
	if t.is(flagBA) {
		return pairbench.BA
	}
	return pairbench.AB
}

// capsHit lists the caps the trial r hit, known ones first; x is its
// extra.
func capsHit(r *record, x *recordExtra) []pairbench.Cap {
	var out []pairbench.Cap
	for _, c := range []struct {
		f   recordFlags
		cap pairbench.Cap
	}{{flagCapTime, pairbench.CapTime}, {flagCapTurns, pairbench.CapTurns}, {flagCapSpend, pairbench.CapSpend}} {
		if r.is(c.f) {
			out = append(out, c.cap)
		}
	}
	if x != nil {
		out = append(out, x.caps...)
	}
	return out
}

// answer is the agreement check's field of the extracted answer.
func (x *recordExtra) answer() (any, bool) {
	if x == nil {
		return nil, false
	}
	return x.answerAt, x.hasAnswer
}

func (x *recordExtra) native() []string {
	if x == nil {
		return nil
	}
	return x.nativeTools
}

// newRecord keeps what the statistics need of r, the rare parts in its
// extra (nil without any); agreement is the intent's check, if any.
func newRecord(r *pairbench.Row, agreement *Agreement) (record, *recordExtra) {
	t := record{
		wall: r.WallSeconds, cost: r.CostUSD, inputTokens: r.InputTokens, startDelay: r.StartDelayMS, startup: float32(r.StartupSeconds),
		pair: int32(r.Pair), attempt: int32(min(r.Attempt, 1<<31-1)), turns: int32(max(min(r.Turns, 1<<31-1), -1<<31)),
		oc: uint8(max(0, slices.Index(pairbench.Outcomes, r.Outcome))), // Add takes valid rows only
	}
	if r.Adopted {
		t.flags |= flagAdopted
	}
	if r.Turns <= 1 && len(r.WebMCP) == 0 {
		t.flags |= flagToolless
	}
	if r.Order == pairbench.BA {
		t.flags |= flagBA
	}
	if r.BrowserRefusals > 0 {
		t.flags |= flagRefused
	}
	switch r.WebMCPImpl {
	case pairbench.WebMCPNative:
		t.flags |= flagNative
	case pairbench.WebMCPPolyfill:
		t.flags |= flagPolyfill
	}
	var extra recordExtra
	for _, c := range r.CapsHit {
		switch c {
		case pairbench.CapTime:
			t.flags |= flagCapTime
		case pairbench.CapTurns:
			t.flags |= flagCapTurns
		case pairbench.CapSpend:
			t.flags |= flagCapSpend
		default:
			extra.caps = append(extra.caps, c)
		}
	}
	if len(r.NativeTools) > 0 {
		extra.nativeTools = slices.Clone(r.NativeTools)
	}
	if agreement != nil && r.Outcome == pairbench.Correct {
		extra.answerAt, extra.hasAnswer = pairbench.Lookup(r.Answer.Extracted, agreement.Field)
	}
	extra.judge = newJudgeNote(r.Judge)
	if extra.nativeTools != nil || extra.caps != nil || extra.hasAnswer || extra.judge != nil {
		kept := extra // allocated here only: most records have no extra
		return t, &kept
	}
	return t, nil
}

// slot gathers one pair's attempts: the last attempt of each arm (highest
// attempt number, the later row on a tie) and the aborts.
type slot struct {
	last   [2]record
	aborts [2]int32
	has    [2]bool
}

// complete reports whether both arms' last attempts were scored.
func (s *slot) complete() bool {
	return s.has[0] && s.has[1] && s.last[0].outcome().Scored() && s.last[1].outcome().Scored()
}

// pairRef is a complete pair: its two records and their extras.
type pairRef struct {
	c, t *record
	x    [2]*recordExtra
}

// intentRows is every pair-stage attempt of one intent.
type intentRows struct {
	name      string
	domain    string
	agreement *Agreement
	slots     []slot
	// dense[pair] is 1 + the pair's position in slots (0: none yet) for
	// pair numbers below denseLimit, the planned ones; index holds the rest.
	dense      []int32
	denseLimit int
	index      map[int]int32
	// extras holds the extras of each pair's last attempts, by pair number.
	extras map[int32]*[2]*recordExtra
	// envs holds the WebMCP environments of each pair's last attempts.
	envs envs
}

func newIntentRows(name, domain string, agreement *Agreement, planned int) *intentRows {
	return &intentRows{
		name: name, domain: domain, agreement: agreement,
		slots: make([]slot, 0, planned), denseLimit: 2*planned + 64, index: map[int]int32{},
		extras: map[int32]*[2]*recordExtra{},
	}
}

// slot returns the slot of pair number pair, adding it if needed.
func (in *intentRows) slot(pair int) *slot {
	if pair >= 0 && pair < in.denseLimit {
		if pair >= len(in.dense) {
			in.dense = append(in.dense, make([]int32, pair+1-len(in.dense))...)
		}
		if in.dense[pair] == 0 {
			in.slots = append(in.slots, slot{})
			in.dense[pair] = int32(len(in.slots))
		}
		return &in.slots[in.dense[pair]-1]
	}
	k, ok := in.index[pair]
	if !ok {
		k = int32(len(in.slots))
		in.index[pair] = k
		in.slots = append(in.slots, slot{})
	}
	return &in.slots[k]
}

// add records one pair-stage attempt.
func (in *intentRows) add(r *pairbench.Row) {
	s := in.slot(r.Pair)
	a := armIndex(r.Arm)
	if r.Outcome == pairbench.Aborted {
		s.aborts[a]++
	}
	if !s.has[a] || int(s.last[a].attempt) <= r.Attempt {
		var x *recordExtra
		s.last[a], x = newRecord(r, in.agreement)
		s.has[a] = true
		pair := s.last[a].pair
		in.envs.note(pair, a, newEnvKey(r))
		if e := in.extras[pair]; e != nil {
			e[a] = x
		} else if x != nil {
			e = new([2]*recordExtra)
			e[a] = x
			in.extras[pair] = e
		}
	}
}

// pairs returns the intent's complete pairs in pair order and fills the
// pair accounting (Planned is left to the caller).
func (in *intentRows) pairs(counts *PairCounts) []pairRef {
	slices.SortFunc(in.slots, func(x, y slot) int { return cmp.Compare(x.pairNumber(), y.pairNumber()) })
	in.dense, in.index = nil, nil
	var out []pairRef
	counts.Seen = len(in.slots)
	for i := range in.slots {
		s := &in.slots[i]
		counts.Aborts.Control += int(s.aborts[0])
		counts.Aborts.Treatment += int(s.aborts[1])
		if s.complete() && in.envs.differ(s.last[0].pair) {
			counts.EnvDiffers = append(counts.EnvDiffers, int(s.last[0].pair))
			continue
		}
		if s.complete() {
			p := pairRef{c: &s.last[0], t: &s.last[1]}
			if e := in.extras[s.last[0].pair]; e != nil {
				p.x = *e
			}
			out = append(out, p)
			continue
		}
		aborted := false
		for a := range 2 {
			if !s.has[a] || !s.last[a].outcome().Scored() {
				if a == 0 {
					counts.LeftOut.Control++
				} else {
					counts.LeftOut.Treatment++
				}
			}
			if s.has[a] && s.last[a].outcome() == pairbench.Aborted {
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

func (s *slot) pairNumber() int32 {
	if s.has[0] {
		return s.last[0].pair
	}
	return s.last[1].pair
}

// armIndex is a pairbench.Arm's position in per-arm arrays.
func armIndex(a pairbench.Arm) int {
	if a == pairbench.Treatment {
		return 1
	}
	return 0
}

type toolKey struct {
	domain, tool string
	registered   bool
}

type toolAcc struct {
	calls, failures int
	unregistered    int // trials in which the tool did not register
	errors          map[string]int
	// armCalls and armFailures split calls and failures by arm (armIndex).
	armCalls, armFailures [2]int
}

// tool returns the tally of one tool, created on first use.
func (b *Builder) tool(domain, name string, registered bool) *toolAcc {
	acc := b.tools[toolKey{domain, name, registered}]
	if acc == nil {
		acc = &toolAcc{errors: map[string]int{}}
		b.tools[toolKey{clone(domain), clone(name), registered}] = acc
	}
	return acc
}

// addError counts one occurrence of msg.
func (a *toolAcc) addError(msg string) {
	if _, ok := a.errors[msg]; !ok {
		msg = clone(msg)
	}
	a.errors[msg]++
}

// Builder computes a run's report from its rows one at a time, keeping only
// what the statistics need of each: a run of a million rows needs no more
// memory than its pairs' numbers. Add the rows in file order (the later of
// two rows with the same attempt counts), then call Report once.
type Builder struct {
	plan     Plan
	agree    map[string]*Agreement
	planned  map[string]int // pairs planned per intent
	intents  []*intentRows
	byName   map[string]*intentRows
	adoption map[string]*DomainAdoption
	tools    map[toolKey]*toolAcc
	attempts int
	spend    float64
	skipped  int
}

// NewBuilder starts the report of a run planned as plan.
func NewBuilder(plan Plan) *Builder {
	b := &Builder{
		plan:     plan,
		agree:    map[string]*Agreement{},
		planned:  map[string]int{},
		byName:   map[string]*intentRows{},
		adoption: map[string]*DomainAdoption{},
		tools:    map[toolKey]*toolAcc{},
	}
	for _, p := range plan.Intents {
		if _, seen := b.agree[p.ID]; !seen {
			b.agree[p.ID] = p.Agreement
			b.planned[p.ID] = p.Pairs
		}
	}
	return b
}

// Unread returns the fields of a row that Add never reads, for a reader to
// skip: every bulky field but the extracted answer, which agreement checks
// compare, when an intent of the plan has one.
func (b *Builder) Unread() pairbench.RowFields {
	f := pairbench.FieldTrialDir | pairbench.FieldReason | pairbench.FieldRaw | pairbench.FieldExtracted |
		pairbench.FieldToolsDeclared | pairbench.FieldUnregistered | pairbench.FieldError | pairbench.FieldStartedAt
	for _, a := range b.agree {
		if a != nil {
			f &^= pairbench.FieldExtracted
		}
	}
	return f
}

// Add records one row. A row that fails pairbench.Row.Validate is skipped
// and counted. Add keeps nothing that points into r.
func (b *Builder) Add(r *pairbench.Row) {
	if r.Validate() != nil {
		b.skipped++
		return
	}
	b.attempts++
	b.spend += r.SpendUSD()
	for i := range r.WebMCP {
		inv := &r.WebMCP[i]
		acc := b.tool(r.Domain, inv.Tool, inv.Registered)
		acc.calls++
		acc.armCalls[armIndex(r.Arm)]++
		if inv.Status != "ok" {
			acc.failures++
			acc.armFailures[armIndex(r.Arm)]++
			msg := inv.Error
			if msg == "" {
				msg = "(no message)"
			}
			acc.addError(msg)
		}
	}
	for i := range r.Unregistered {
		f := &r.Unregistered[i]
		acc := b.tool(r.Domain, f.Tool, true)
		acc.unregistered++
		where := f.File
		if where != "" && f.Line > 0 {
			where = fmt.Sprintf("%s:%d", where, f.Line)
		}
		if where != "" {
			where = " (" + where + ")"
		}
		acc.addError("did not register" + where + ": " + f.Error)
	}
	if r.Stage == pairbench.StageAdoption {
		d := b.adoption[r.Domain]
		if d == nil {
			d = &DomainAdoption{Domain: clone(r.Domain)}
			b.adoption[d.Domain] = d
		}
		if r.Outcome == pairbench.Aborted {
			d.Aborted++
		} else {
			d.Trials++
			if r.Adopted {
				d.Adopted++
			}
		}
		return
	}
	in := b.byName[r.Intent]
	if in == nil {
		in = newIntentRows(clone(r.Intent), clone(r.Domain), b.agree[r.Intent], b.planned[r.Intent])
		b.byName[in.name] = in
		b.intents = append(b.intents, in)
	}
	in.add(r)
}

// clone copies s so that a Builder never keeps a caller's buffer alive.
func clone(s string) string { return string([]byte(s)) }
