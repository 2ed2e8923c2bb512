// Package viewer builds the report site of a run: beside report.html (the
// run page, rendered by package stats) a page per intent, with a paired
// plot of its trials' times, its figures and a table of its pairs, and a
// page per pair with both arms side by side: each turn, each tool call with
// its arguments and a trimmed result, each WebMCP invocation, the answer,
// the grade, the caps hit, the end-of-trial screenshot and a timeline of
// the trial. Everything a pair page shows comes from the run's rows and its
// trial directories (docs/viewer.md).
//
// The site is plain files with relative links: it works from the run
// directory, from an artifact store that serves the run's files, and behind
// a server (Handler). Its pages load nothing from elsewhere and run no
// script; every string from a trial (transcripts, answers and tool results
// come from pages that may be hostile) is escaped by html/template, and
// each page carries a strict Content-Security-Policy (Policy).
package viewer

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/report"
	"github.com/pairbench/pairbench/rundir"
)

// IntentsDir holds the intent pages and, below each, its pair pages.
const IntentsDir = rundir.SiteDir

// IntentPage is the run-relative path of intent id's page.
func IntentPage(id string) string { return path.Join(IntentsDir, slug(id)+".html") }

// PairPage is the run-relative path of the page of pair p of intent id.
func PairPage(id string, p int) string {
	return path.Join(IntentsDir, slug(id), strconv.Itoa(p)+".html")
}

// HTMLOptions are report.html's links into the site, and the intents'
// fragments the site's pages show too (figures, of the same report).
func HTMLOptions(figures *report.IntentHTML) report.HTMLOptions {
	return report.HTMLOptions{IntentPage: IntentPage, Figures: figures}
}

var plainName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$`)

// slug is a file name for an intent id: the id itself when it is a plain
// name (intent ids are), else a name made from its hash, so an id from a
// row can never reach outside the site's directory or collide with
// another.
func slug(id string) string {
	if plainName.MatchString(id) && !strings.HasPrefix(id, "x-") {
		return id
	}
	sum := sha256.Sum256([]byte(id))
	return "x-" + hex.EncodeToString(sum[:8])
}

// Site gathers, from a run's rows, what the site shows beyond the report:
// every pair's attempts. Rows are given with Add, as a reader streams them;
// Write then writes the pages.
//
// A run of a million rows is kept in a few tens of bytes a row, in memory
// the collector never scans: each pair is a pairSlot with no pointer, in
// one slice, found through a rundir.PairIndex of pair numbers.
type Site struct {
	plan *rundir.Plan
	dir  rundir.RunDir
	// trials is set when the run directory holds trial directories: pair
	// pages are then written, and whole rows kept for them.
	trials bool
	// pairs finds each intent's pairs in slots by pair number.
	pairs *rundir.PairIndex
	slots []pairSlot
	// earlier holds a pair's arm's attempts beside its last, kept with
	// trial directories only (pair pages list them); rows holds the whole
	// rows kept for pair pages, which stored attempts index.
	earlier map[armOf][]stored
	rows    []*pairbench.Row

	// OldTranscripts reads the steps of a trial recorded before trials
	// kept steps.jsonl from its transcript.jsonl, in the run's agent's
	// own format, each line at its time from timeline.json (bench sets it
	// from the agents' table). Without it such a trial's page shows no
	// steps and says why.
	OldTranscripts func(transcript io.Reader, times []int64) ([]rundir.Step, error)
}

// armOf is one arm of the pair at an index of Site.slots.
type armOf struct {
	slot int32
	arm  uint8
}

// pairSlot is one pair: per arm (control first), its attempt that counts
// so far (the highest attempt number, the later row on a tie) and how
// many attempts it had.
type pairSlot struct {
	Pair      int
	at        int32 // its index in Site.slots
	orderCode uint8
	n         [2]int32
	last      [2]stored
}

// stored is one row, as the site keeps it: outcome and row by number.
type stored struct {
	wall     float64
	n, turns int32
	// row is the index+1 of the whole row in Site.rows, 0 for none.
	row     int32
	outcome uint8 // pairbench.Outcomes' index+1, 0 for none
	adopted bool
}

// Order is the pair's order.
func (p *pairSlot) Order() pairbench.Order {
	if p.orderCode == 2 {
		return pairbench.BA
	}
	if p.orderCode == 1 {
		return pairbench.AB
	}
	return ""
}

func orderCode(o pairbench.Order) uint8 {
	switch o {
	case pairbench.AB:
		return 1
	case pairbench.BA:
		return 2
	}
	return 0
}

// Outcome is the attempt's outcome.
func (a *stored) Outcome() pairbench.Outcome {
	if a.outcome == 0 {
		return ""
	}
	return pairbench.Outcomes[a.outcome-1]
}

func outcomeCode(o pairbench.Outcome) uint8 {
	return uint8(slices.Index(pairbench.Outcomes, o) + 1) // 0 for an unknown outcome (rows are validated)
}

// attempt is one row as the pages read it; Row is the whole row, kept
// when the attempt has a trial directory.
type attempt struct {
	N       int
	Outcome pairbench.Outcome
	Wall    float64
	Turns   int
	Adopted bool
	// Row is the whole row, kept when the attempt has a trial directory:
	// its pair page shows it.
	Row *pairbench.Row
}

func armIndex(a pairbench.Arm) int {
	if a == pairbench.Treatment {
		return 1
	}
	return 0
}

// NewSite returns a Site for the run with plan whose directory is dir.
func NewSite(plan *rundir.Plan, dir rundir.RunDir) *Site {
	_, err := os.Stat(dir.File(rundir.TrialsDir))
	// Room for every planned pair: a slice grown by doubling would hold
	// its old and new arrays at once, twice a large run's pairs.
	return &Site{plan: plan, dir: dir, trials: err == nil, pairs: rundir.NewPairIndex(), earlier: map[armOf][]stored{},
		slots: make([]pairSlot, 0, plan.PlannedPairs())}
}

// Unread is the set of row fields the site does not read: every bulky one
// when there are no trial directories (no pair pages to write), none
// otherwise. Readers that feed the site and report.Builder together leave
// out only what both leave out.
func (s *Site) Unread() pairbench.RowFields {
	if s.trials {
		return 0
	}
	return pairbench.FieldTrialDir | pairbench.FieldReason | pairbench.FieldRaw | pairbench.FieldExtracted |
		pairbench.FieldToolsDeclared | pairbench.FieldUnregistered | pairbench.FieldError | pairbench.FieldStartedAt
}

// Add takes one row; r is only read during the call. Rows of the adoption
// stage are not part of a pair and are left out.
func (s *Site) Add(r *pairbench.Row) {
	if r.Stage != pairbench.StagePair {
		return
	}
	k, ok := s.pairs.Get(r.Intent, r.Pair)
	if !ok {
		k = int32(len(s.slots))
		s.slots = append(s.slots, pairSlot{Pair: r.Pair, at: k, orderCode: orderCode(r.Order)})
		s.pairs.Set(r.Intent, r.Pair, k)
	}
	slot := &s.slots[k]
	a := stored{n: int32(r.Attempt), outcome: outcomeCode(r.Outcome), wall: r.WallSeconds, turns: int32(r.Turns), adopted: r.Adopted}
	if s.trials && r.TrialDir != "" {
		s.rows = append(s.rows, copyRow(r))
		a.row = int32(len(s.rows))
	}
	arm := armIndex(r.Arm)
	if slot.n[arm] > 0 {
		keep, other := slot.last[arm], a
		if a.n >= keep.n {
			keep, other = a, keep
		}
		slot.last[arm] = keep
		if s.trials {
			at := armOf{k, uint8(arm)}
			s.earlier[at] = append(s.earlier[at], other)
		}
	} else {
		slot.last[arm] = a
	}
	slot.n[arm]++
}

// copyRow is a deep copy of r, which the reader may reuse.
func copyRow(r *pairbench.Row) *pairbench.Row {
	cp := *r
	cp.CapsHit = slices.Clone(r.CapsHit)
	cp.ToolsDeclared = slices.Clone(r.ToolsDeclared)
	cp.WebMCP = slices.Clone(r.WebMCP)
	cp.NativeTools = slices.Clone(r.NativeTools)
	cp.Unregistered = slices.Clone(r.Unregistered)
	if r.Answer.Extracted != nil {
		cp.Answer.Extracted = make(map[string]any, len(r.Answer.Extracted))
		for k, v := range r.Answer.Extracted {
			cp.Answer.Extracted[k] = v
		}
	}
	return &cp
}

// view is a stored attempt as the pages read it.
func (s *Site) view(a stored) *attempt {
	v := &attempt{N: int(a.n), Outcome: a.Outcome(), Wall: a.wall, Turns: int(a.turns), Adopted: a.adopted}
	if a.row > 0 {
		v.Row = s.rows[a.row-1]
	}
	return v
}

// lastOf is the attempt of arm that counts, nil for none.
func (p *pairSlot) lastOf(arm int) *stored {
	if p.n[arm] == 0 {
		return nil
	}
	return &p.last[arm]
}

// attempts returns every attempt of pair p's arm, its last one last.
func (s *Site) attempts(p *pairSlot, arm int) []*attempt {
	if p.n[arm] == 0 {
		return nil
	}
	var out []*attempt
	for _, a := range s.earlier[armOf{p.at, uint8(arm)}] {
		out = append(out, s.view(a))
	}
	return append(out, s.view(p.last[arm]))
}

// last is the attempt that counts: the highest attempt number, the later
// row on a tie; nil for none.
func last(as []*attempt) *attempt {
	var out *attempt
	for _, a := range as {
		if out == nil || a.N >= out.N {
			out = a
		}
	}
	return out
}

// pairClass says how a pair's arms compare, for colours and filters.
type pairClass string

const (
	classBoth       pairClass = "both"
	classTreatment  pairClass = "treatment-only"
	classControl    pairClass = "control-only"
	classNeither    pairClass = "neither"
	classIncomplete pairClass = "incomplete"
)

// pairClasses are the classes in the order the pages list them, with the
// words they show.
var pairClasses = []struct {
	Class pairClass
	Name  string
}{
	{classControl, "only control correct"},
	{classTreatment, "only treatment correct"},
	{classBoth, "both correct"},
	{classNeither, "neither correct"},
	{classIncomplete, "incomplete"},
}

// complete reports whether both arms' last attempts were scored.
func (p *pairSlot) complete() bool {
	c, t := p.lastOf(0), p.lastOf(1)
	return c != nil && t != nil && c.Outcome().Scored() && t.Outcome().Scored()
}

// class says how the pair's arms compare.
func (p *pairSlot) class() pairClass {
	if !p.complete() {
		return classIncomplete
	}
	correct := outcomeCode(pairbench.Correct)
	c, t := p.last[0].outcome == correct, p.last[1].outcome == correct
	switch {
	case c && t:
		return classBoth
	case t:
		return classTreatment
	case c:
		return classControl
	}
	return classNeither
}

// disagree reports whether exactly one arm was correct (a discordant pair).
func (p *pairSlot) disagree() bool {
	k := p.class()
	return k == classTreatment || k == classControl
}

// intentPairs returns intent id's pairs by pair number.
func (s *Site) intentPairs(id string) []*pairSlot {
	var out []*pairSlot
	for _, k := range s.pairs.Positions(id) {
		out = append(out, &s.slots[k])
	}
	return out
}
