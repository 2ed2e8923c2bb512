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
	"os"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/runner"
	"github.com/pairbench/pairbench/stats"
)

// IntentsDir holds the intent pages and, below each, its pair pages.
const IntentsDir = runner.SiteDir

// IntentPage is the run-relative path of intent id's page.
func IntentPage(id string) string { return path.Join(IntentsDir, slug(id)+".html") }

// PairPage is the run-relative path of the page of pair p of intent id.
func PairPage(id string, p int) string {
	return path.Join(IntentsDir, slug(id), strconv.Itoa(p)+".html")
}

// HTMLOptions are report.html's links into the site, and the intents'
// fragments the site's pages show too (figures, of the same report).
func HTMLOptions(figures *stats.IntentHTML) stats.HTMLOptions {
	return stats.HTMLOptions{IntentPage: IntentPage, Figures: figures}
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
type Site struct {
	plan *runner.Plan
	dir  runner.RunDir
	// trials is set when the run directory holds trial directories: pair
	// pages are then written, and whole rows kept for them.
	trials bool
	// pairs holds each intent's pairs by pair number.
	pairs map[string]map[int]*pairSlot
}

// pairSlot is one pair's attempts, per arm (control first), in the order
// read.
type pairSlot struct {
	Intent string
	Pair   int
	Order  pairbench.Order
	Arms   [2][]*attempt
}

// attempt is one row, as the site keeps it.
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
func NewSite(plan *runner.Plan, dir runner.RunDir) *Site {
	_, err := os.Stat(dir.File(runner.TrialsDir))
	return &Site{plan: plan, dir: dir, trials: err == nil, pairs: map[string]map[int]*pairSlot{}}
}

// Unread is the set of row fields the site does not read: every bulky one
// when there are no trial directories (no pair pages to write), none
// otherwise. Readers that feed the site and stats.Builder together leave
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
	byPair := s.pairs[r.Intent]
	if byPair == nil {
		byPair = map[int]*pairSlot{}
		s.pairs[r.Intent] = byPair
	}
	slot := byPair[r.Pair]
	if slot == nil {
		slot = &pairSlot{Intent: r.Intent, Pair: r.Pair, Order: r.Order}
		byPair[r.Pair] = slot
	}
	a := &attempt{N: r.Attempt, Outcome: r.Outcome, Wall: r.WallSeconds, Turns: r.Turns, Adopted: r.Adopted}
	if s.trials && r.TrialDir != "" {
		a.Row = copyRow(r)
	}
	slot.Arms[armIndex(r.Arm)] = append(slot.Arms[armIndex(r.Arm)], a)
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
	c, t := last(p.Arms[0]), last(p.Arms[1])
	return c != nil && t != nil && c.Outcome.Scored() && t.Outcome.Scored()
}

// class says how the pair's arms compare.
func (p *pairSlot) class() pairClass {
	if !p.complete() {
		return classIncomplete
	}
	c, t := last(p.Arms[0]).Outcome == pairbench.Correct, last(p.Arms[1]).Outcome == pairbench.Correct
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
	for _, p := range s.pairs[id] {
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b *pairSlot) int { return a.Pair - b.Pair })
	return out
}
