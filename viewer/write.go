package viewer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/sync/errgroup"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/report"
	"github.com/pairbench/pairbench/rundir"
)

// Write writes the site's pages into out (which may be the run directory
// itself): a page per intent of rep and, when the run has trial
// directories, a page per pair. Links to a trial's files (its screenshot,
// transcript) are relative to the run directory, so out should be it, or a
// copy that keeps trials/ beside the pages. figures are rep's intent
// fragments (report.NewIntentHTML), which report.html shows too. The intents
// are written on every core. It returns how many pages it wrote.
func (s *Site) Write(out rundir.RunDir, rep *report.Report, figures *report.IntentHTML) (int, error) {
	if err := os.MkdirAll(out.File(IntentsDir), 0o755); err != nil {
		return 0, fmt.Errorf("write the site: %w", err)
	}
	var written atomic.Int64
	// The pages are rendered into buffers reused from intent to intent: a
	// run's pages, hundreds of megabytes at a million rows, are not each a
	// new allocation.
	buffers := sync.Pool{New: func() any { return new(bytes.Buffer) }}
	var g errgroup.Group
	g.SetLimit(runtime.GOMAXPROCS(0))
	for i := range rep.Intents {
		g.Go(func() error {
			page := buffers.Get().(*bytes.Buffer)
			defer buffers.Put(page)
			n, err := s.writeIntent(out, page, rep, figures, &rep.Intents[i])
			written.Add(int64(n))
			return err
		})
	}
	err := g.Wait()
	return int(written.Load()), err
}

// writeIntent writes intent in's page and, with trial directories, its
// pairs' pages, rendered in page, and returns how many it wrote.
func (s *Site) writeIntent(out rundir.RunDir, page *bytes.Buffer, rep *report.Report, figures *report.IntentHTML, in *report.Intent) (int, error) {
	pairs := s.intentPairs(in.ID)
	if err := s.intentPage(page, rep, figures, in, pairs); err != nil {
		return 0, err
	}
	if err := writePage(out.File(IntentPage(in.ID)), page.Bytes()); err != nil {
		return 0, err
	}
	if !s.trials {
		return 1, nil
	}
	if err := os.MkdirAll(out.File(path.Join(IntentsDir, slug(in.ID))), 0o755); err != nil {
		return 1, fmt.Errorf("write the pages of %s: %w", in.ID, err)
	}
	for j, p := range pairs {
		var prev, next *pairSlot
		if j > 0 {
			prev = pairs[j-1]
		}
		if j+1 < len(pairs) {
			next = pairs[j+1]
		}
		if err := s.pairPage(page, rep, in, p, prev, next); err != nil {
			return 1 + j, err
		}
		if err := writePage(out.File(PairPage(in.ID, p.Pair)), page.Bytes()); err != nil {
			return 1 + j, err
		}
	}
	return 1 + len(pairs), nil
}

// writePage replaces the file at p whole (a reader sees the old page or
// the new), through a dot-name the store's syncer never uploads; p's
// directory must exist. Pages are rebuilt from the rows by each report, so
// it does not wait for the disk. A page that is not written whole (a full
// disk) leaves no temporary file.
func writePage(p string, page []byte) error {
	tmp := filepath.Join(filepath.Dir(p), "."+filepath.Base(p)+".tmp")
	if err := os.WriteFile(tmp, page, 0o644); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", p, err)
	}
	if err := os.Rename(tmp, p); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", p, err)
	}
	return nil
}

// Head is what every page of the site shares: the head of the document
// (report.PageHead), and the run and the way back to its directory.
type Head struct {
	report.PageHead
	// Root is the relative URL of the run directory from the page.
	Root string
	Run  string
}

// newPage is the head of a page titled title (with the run's id after
// it), root being the run directory from the page.
func newPage(rep *report.Report, title, root string) Head {
	return Head{
		PageHead: report.PageHead{Title: title + " · pairbench " + rep.RunID, Policy: Policy, Style: template.CSS(Style)},
		Root:     root, Run: rep.RunID,
	}
}

// intentView is an intent page.
type intentView struct {
	Head
	ID, Label, LabelClass, Why string
	Domain                     string
	Figures                    template.HTML
	Plot                       template.HTML
	Pairs                      []pairRow
	// PairRows is Pairs' rows of the table (markup.go).
	PairRows template.HTML
	Classes  []classChoice
	Disagree int
	// Planned counts the planned pairs; Missing, those without a row.
	Planned, Missing int
	// Linked is set when the pairs have pages.
	Linked bool
	// Control and Treatment name the arms by what they are when the run
	// configured them ("" for no tools against tools).
	Control, Treatment string
}

type classChoice struct {
	Class pairClass
	Name  string
	N     int
}

// pairRow is one pair in an intent page's table.
type pairRow struct {
	Pair     int
	Order    string
	Class    pairClass
	Disagree bool
	Page     string
	Arms     [2]armCell
}

type armCell struct {
	Outcome  string
	Wall     string
	Turns    int
	Adopted  bool
	Attempts int
}

func (s *Site) intentPage(page *bytes.Buffer, rep *report.Report, figures *report.IntentHTML, in *report.Intent, pairs []*pairSlot) error {
	fragment, err := figures.Fragment(in.ID)
	if err != nil {
		return err
	}
	v := intentView{
		Head: newPage(rep, in.ID, ".."),
		ID:   in.ID, Label: labelText(in.Label), LabelClass: report.LabelClass(in.Label), Why: in.Why,
		Domain:  in.Domain,
		Figures: fragment,
		Plot:    newPairedPlot(pairs, slug(in.ID), s.trials).html(),
		Planned: in.Pairs.Planned,
		Linked:  s.trials,
	}
	if a := rep.Arms; a != nil {
		v.Control, v.Treatment = a.ControlFor(in.Domain).Name, a.Treatment.Name
	}
	counts := map[pairClass]int{}
	for _, p := range pairs {
		row := pairRow{Pair: p.Pair, Order: string(p.Order()), Class: p.class(), Disagree: p.disagree()}
		if s.trials {
			row.Page = path.Join(slug(in.ID), fmt.Sprint(p.Pair)+".html")
		}
		for arm := range 2 {
			if a := p.lastOf(arm); a != nil {
				row.Arms[arm] = armCell{Outcome: string(a.Outcome()), Wall: seconds(a.wall), Turns: int(a.turns),
					Adopted: a.adopted, Attempts: int(p.n[arm])}
			}
		}
		counts[row.Class]++
		if row.Disagree {
			v.Disagree++
		}
		v.Pairs = append(v.Pairs, row)
	}
	v.PairRows = pairRowsHTML(v.Pairs)
	v.Missing = max(0, in.Pairs.Planned-len(pairs))
	for _, c := range pairClasses {
		if counts[c.Class] > 0 {
			v.Classes = append(v.Classes, classChoice{c.Class, c.Name, counts[c.Class]})
		}
	}
	return render(page, "intent", v)
}

func labelText(l pairbench.Label) string {
	if l == "" {
		return "no label"
	}
	return string(l)
}

// seconds shows a wall time.
func seconds(s float64) string { return strconv.FormatFloat(s, 'f', 1, 64) + " s" }

// pairView is a pair page.
type pairView struct {
	Head
	Intent, IntentPage, Label, LabelClass string
	Pair                                  int
	Order                                 string
	Class                                 pairClass
	ClassName                             string
	Prev, Next                            string
	Arms                                  [2]trialView
	// Compared names the arms of a run whose arms were configured ("" for
	// no tools against tools).
	Compared string
}

// trialView is one arm of a pair page: its attempt that counts, in full.
type trialView struct {
	Arm string
	// Root is the relative URL of the run directory from the page.
	Root    string
	Missing bool
	Row     *pairbench.Row
	// Cost is the row's cost as the report shows it.
	Cost string
	// Earlier are the attempts before it (aborted ones, retried).
	Earlier   []*pairbench.Row
	Extracted string
	Files     trialFiles
	Timeline  *timelineView
	Steps     []step
	// Problem says what of the trial directory could not be read.
	Problem string
}

// trialFiles are the run-relative URLs of a trial's files, "" when absent.
type trialFiles struct {
	Dir, Screenshot, Transcript, Timeline, Setup, WebMCP string
}

func (s *Site) pairPage(page *bytes.Buffer, rep *report.Report, in *report.Intent, p *pairSlot, prev, next *pairSlot) error {
	v := pairView{
		Head:   newPage(rep, fmt.Sprintf("%s · pair %d", in.ID, p.Pair), "../.."),
		Intent: in.ID, IntentPage: "../" + slug(in.ID) + ".html",
		Label: labelText(in.Label), LabelClass: report.LabelClass(in.Label),
		Pair: p.Pair, Order: orderText(p.Order()), Class: p.class(),
	}
	for _, c := range pairClasses {
		if c.Class == v.Class {
			v.ClassName = c.Name
		}
	}
	if prev != nil {
		v.Prev = fmt.Sprint(prev.Pair) + ".html"
	}
	if next != nil {
		v.Next = fmt.Sprint(next.Pair) + ".html"
	}
	names := []string{string(pairbench.Control), string(pairbench.Treatment)}
	if a := rep.Arms; a != nil {
		control := a.ControlFor(in.Domain).Name
		names[0] += ": " + control
		names[1] += ": " + a.Treatment.Name
		v.Compared = fmt.Sprintf("control had %s; treatment had %s", control, a.Treatment.Name)
	}
	for arm, name := range names {
		v.Arms[arm] = s.trialView(name, s.attempts(p, arm))
		v.Arms[arm].Root = v.Root
		if r := v.Arms[arm].Row; r != nil {
			v.Arms[arm].Cost = report.ShowCost(r.CostUSD, rep.Model.Scripted)
		}
	}
	return render(page, "pair", v)
}

func orderText(o pairbench.Order) string {
	switch o {
	case pairbench.AB:
		return "control ran first"
	case pairbench.BA:
		return "treatment ran first"
	}
	return string(o)
}

func (s *Site) trialView(arm string, attempts []*attempt) trialView {
	t := trialView{Arm: arm}
	a := last(attempts)
	if a == nil || a.Row == nil {
		t.Missing = true
		return t
	}
	t.Row = a.Row
	for _, e := range attempts {
		if e != a && e.Row != nil {
			t.Earlier = append(t.Earlier, e.Row)
		}
	}
	slices.SortFunc(t.Earlier, func(x, y *pairbench.Row) int { return x.Attempt - y.Attempt })
	if len(a.Row.Answer.Extracted) > 0 {
		b, _ := json.MarshalIndent(a.Row.Answer.Extracted, "", "  ")
		t.Extracted = string(b)
	}
	dir, ok := trialDir(a.Row.TrialDir)
	if !ok {
		t.Problem = fmt.Sprintf("the row's trial directory %q is not inside %s/", a.Row.TrialDir, rundir.TrialsDir)
		return t
	}
	var problems []string
	file := func(name string) string {
		rel := path.Join(dir, name)
		if _, err := os.Stat(s.dir.File(rel)); err != nil {
			return ""
		}
		return rel
	}
	t.Files = trialFiles{Dir: dir, Screenshot: file(rundir.TrialScreenshot), Transcript: file(rundir.TrialTranscript),
		Timeline: file(rundir.TrialTimeline), Setup: file(rundir.TrialSetup), WebMCP: file(rundir.TrialWebMCP)}
	var tl rundir.Timeline
	if t.Files.Timeline != "" {
		if err := readJSON(s.dir.File(t.Files.Timeline), &tl); err != nil {
			problems = append(problems, err.Error())
		} else {
			t.Timeline = newTimelineView(&tl, a.Row)
		}
	}
	steps, err := s.steps(dir, t.Files.Transcript, tl.Transcript)
	if err != nil {
		problems = append(problems, err.Error())
	}
	t.Steps = showSteps(steps)
	t.Problem = strings.Join(problems, "; ")
	return t
}

// steps reads a trial's steps from dir: its steps.jsonl, or, for a trial
// recorded before trials kept one, its transcript (the run-relative path
// transcript, "" when there is none) through OldTranscripts, each line at
// its time in times.
func (s *Site) steps(dir, transcript string, times []int64) ([]rundir.Step, error) {
	f, err := os.Open(s.dir.File(path.Join(dir, rundir.TrialSteps)))
	if err == nil {
		defer f.Close()
		return rundir.ReadSteps(f)
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	if transcript == "" {
		return nil, errors.New("the trial directory has no " + rundir.TrialTranscript)
	}
	if s.OldTranscripts == nil {
		return nil, errors.New("the trial directory has no " + rundir.TrialSteps)
	}
	if f, err = os.Open(s.dir.File(transcript)); err != nil {
		return nil, err
	}
	defer f.Close()
	return s.OldTranscripts(f, times)
}

// trialDir is a row's trial directory as a clean run-relative path, and
// whether it lies inside trials/ (a row could say anything).
func trialDir(rel string) (string, bool) {
	clean := path.Clean(rel)
	return clean, fs.ValidPath(clean) && rundir.IsTrialFile(clean)
}

// maxTrialJSON bounds the JSON files of a trial the viewer reads.
const maxTrialJSON = 16 << 20

func readJSON(p string, v any) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return err
	}
	if info.Size() > maxTrialJSON {
		return fmt.Errorf("%s is larger than %d bytes", filepath.Base(p), maxTrialJSON)
	}
	if err := json.NewDecoder(f).Decode(v); err != nil {
		return fmt.Errorf("read %s: %w", filepath.Base(p), err)
	}
	return nil
}

// render renders page name of v into b, replacing what b held.
func render(b *bytes.Buffer, name string, v any) error {
	b.Reset()
	if err := pages.ExecuteTemplate(b, name, v); err != nil {
		return fmt.Errorf("render the %s page: %w", name, err)
	}
	return nil
}

// errNoRun is returned for a directory with no report to show.
var errNoRun = errors.New("no report.html: not a reported run directory (run pairbench report on it first)")
