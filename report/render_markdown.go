package report

import (
	"errors"
	"fmt"
	"html"
	"io"
	"strings"
	texttemplate "text/template"
	"unicode/utf8"

	"github.com/pairbench/pairbench"
)

// MarkdownLimit is the most bytes WriteMarkdown writes (and so the most
// characters): below 60,000, which leaves room under GitHub's 65,536-character
// comment limit for whatever a bot adds around the report.
const MarkdownLimit = 59_000

// firstScreen is the most intents the comment's first table lists; the
// rest, still worst first, are folded below it.
const firstScreen = 20

// MarkdownOptions control WriteMarkdown.
type MarkdownOptions struct {
	// FullReportURL is where the full report (report.html) can be read. The
	// comment links it in its footer and wherever it leaves something out.
	// "" means no link.
	FullReportURL string
	// Limit caps the output in bytes; 0, or anything above MarkdownLimit,
	// means MarkdownLimit.
	Limit int
}

// WriteMarkdown writes r as Markdown for a pull-request comment; see
// Markdown.
func WriteMarkdown(w io.Writer, r *Report, opts MarkdownOptions) error {
	if _, err := io.WriteString(w, Markdown(r, opts)); err != nil {
		return fmt.Errorf("write markdown report: %w", err)
	}
	return nil
}

// Markdown renders r for a pull-request comment whose first screen answers
// the question: the verdict line, then one narrow table (intent, label,
// Δ accuracy, speedup, pairs) of the worst firstScreen intents, worst label
// first, that fits a 1,000-pixel column. Everything else is folded in
// <details>: the rest of the intents, every figure with its interval and p
// value, each intent's details, the tool and adoption tables, and the run
// checks. There is no chart: none stays readable at 40 intents in a comment,
// and the full report plots every intent.
//
// The result never exceeds the limit in opts. When everything does not fit,
// the parts a reader needs least go first: tool and adoption tables, then
// intent details from the last, then the rows of the figures table, then the
// folded rows of the narrow table; each cut is announced with a link to the
// full report. The verdict line and the first table always stay. Text that
// comes from rows or plans (intent and tool names, error messages) is
// escaped so that it renders as text.
//
// The layout is templates/report.md.tmpl's "comment"; Markdown decides
// what fits from the lengths of the parts that template writes.
func Markdown(r *Report, opts MarkdownOptions) string {
	limit := opts.Limit
	if limit <= 0 || limit > MarkdownLimit {
		limit = MarkdownLimit
	}
	c := newMdComment(r, opts)
	if whole, ok := c.whole(limit); ok {
		return whole
	}
	c.fit(limit)
	return capMarkdown(mdExec("comment", c), limit, c.Link)
}

// newMdComment is r's comment before anything is fitted.
func newMdComment(r *Report, opts MarkdownOptions) mdComment {
	c := mdComment{markdownView: newMarkdownView(r, opts, firstScreen)}
	c.others = mdFold{
		Summary: fmt.Sprintf("The other %d %s, worst first", len(c.Rest), pluralize(len(c.Rest), "intent")),
		Rows:    c.Rest, Link: c.Link,
	}
	c.figures = mdFold{
		Summary: "Every figure: correct per arm, intervals, Holm-adjusted p values, adoption",
		Wide:    true, Rows: c.worst, Note: speedNote + " " + holmNote, Link: c.Link,
	}
	return c
}

// whole is the comment with nothing left out, and whether it fits in limit
// with room to spare for every note a cut would add: fit, which keeps
// that room, then leaves nothing out either.
func (c mdComment) whole(limit int) (string, bool) {
	spare := len(mdExec("sections cut", mdCut{N: len(c.worst) + 4, Link: c.Link}))
	for _, f := range []*mdFold{&c.others, &c.figures} {
		if len(f.Rows) == 0 {
			continue
		}
		bare := *f
		bare.Rows, bare.Note, bare.Cut = nil, "", len(f.Rows)
		spare += len(mdExec("fold", bare))
		bare.Cut = 0
		spare -= len(mdExec("fold", bare))
	}
	if len(c.others.Rows) > 0 {
		c.Others = &c.others
	}
	if len(c.figures.Rows) > 0 {
		c.Figures = &c.figures
	}
	c.Details, c.KeptTools, c.KeptAdoption = c.worst, c.Tools, c.Adopt
	// Writing stops at the first byte past the room, so a comment far too
	// long costs no more than one that fits.
	w := &roomWriter{room: limit - spare}
	if err := markdownTemplates.ExecuteTemplate(w, "comment", c); err != nil {
		if errors.Is(err, errNoRoom) {
			return "", false
		}
		panic(fmt.Sprintf("report.md.tmpl: %v", err))
	}
	return w.b.String(), true
}

// errNoRoom is roomWriter's error once its room is used up.
var errNoRoom = errors.New("no room left")

// roomWriter keeps what is written to it until more than room bytes are.
type roomWriter struct {
	b    strings.Builder
	room int
}

func (w *roomWriter) Write(p []byte) (int, error) {
	if w.b.Len()+len(p) > w.room {
		return 0, errNoRoom
	}
	return w.b.Write(p)
}

// fit keeps what fits in limit: what always shows, the run checks last,
// and the note of sections cut (counted at its longest) come off the
// budget first; then the optional parts, most wanted first: each fold of
// rows kept whole, cut row by row, or left out; then the sections.
func (c *mdComment) fit(limit int) {
	budget := limit - len(mdExec("first screen", c.markdownView)) - len(mdExec("run checks", c.markdownView)) -
		len(mdExec("sections cut", mdCut{N: len(c.worst) + 4, Link: c.Link}))
	c.Others = fitFold(c.others, &budget)
	c.Figures = fitFold(c.figures, &budget)
	c.fitSections(&budget)
}

// markdownView is a report as the Markdown renderings show it: the view
// both renderings share, with the comment's link and intents worst first,
// cut after the first table's rows.
type markdownView struct {
	reportView
	// Link is a Markdown link to the full report, "" without a URL.
	Link string
	// Arms is the block of a run whose arms were configured, nil for a
	// run of no tools against tools.
	Arms *mdArmsView
	// Top are the first table's intents, Rest the others, worst first;
	// RestTally counts Rest's labels.
	Top, Rest []*intentView
	RestTally string
	// The notes said with an incomplete, forced or scripted run.
	IncompleteNote, ForcedNote, ScriptedNote string

	worst []*intentView
}

// newMarkdownView is r's view with the first shown intents, worst first,
// in the first table.
func newMarkdownView(r *Report, opts MarkdownOptions, shown int) markdownView {
	v := markdownView{
		reportView:     newView(r),
		Link:           mdLink(opts.FullReportURL),
		Arms:           newMdArmsView(r),
		IncompleteNote: incompleteNote,
		ForcedNote:     forcedNote,
		ScriptedNote:   scriptedNote,
	}
	v.worst = worstFirst(v.Intents)
	v.Top, v.Rest = v.worst[:min(len(v.worst), shown)], v.worst[min(len(v.worst), shown):]
	v.RestTally = labelTally(v.Rest)
	return v
}

// mdComment is the comment with what fits in its limit.
type mdComment struct {
	markdownView
	// Others and Figures are the folds of the narrow table's other rows
	// and of the figures table, nil when not one of their rows fits.
	Others, Figures *mdFold
	// Details are the intents whose details fit, worst first; KeptTools
	// and KeptAdoption the tool and adoption tables when they fit too.
	Details      []*intentView
	KeptTools    []toolView
	KeptAdoption []adoptionView
	// SectionsCut counts the sections left out, nil when none was.
	SectionsCut *mdCut

	// others and figures are the two folds with every row.
	others, figures mdFold
}

// mdFold is a <details> fold titled Summary holding a table of Rows (the
// figures table when Wide, else the narrow table), then a line counting
// the Cut rows left out, or, when none was, Note.
type mdFold struct {
	Summary string
	Wide    bool
	Rows    []*intentView
	Cut     int
	Note    string
	Link    string
}

// mdCut counts the sections left out of the comment.
type mdCut struct {
	N    int
	Link string
}

// fitFold is f with as many of its rows as fit in budget, and its note
// when every row fitted and there is room for it too; nil when not one row
// fits. budget is reduced by the fold's length.
func fitFold(f mdFold, budget *int) *mdFold {
	if len(f.Rows) == 0 {
		return nil
	}
	row := "narrow row"
	if f.Wide {
		row = "figures row"
	}
	bare := f
	bare.Rows, bare.Cut, bare.Note = nil, len(f.Rows), ""
	room := *budget - len(mdExec("fold", bare))
	shown := 0
	for _, in := range f.Rows {
		n := len(mdExec(row, in))
		if n > room {
			break
		}
		room -= n
		shown++
	}
	if shown == 0 {
		return nil
	}
	f.Cut, f.Rows = len(f.Rows)-shown, f.Rows[:shown]
	if f.Cut == 0 && f.Note != "" {
		bare.Cut = 0
		without := len(mdExec("fold", bare))
		bare.Note = f.Note
		if len(mdExec("fold", bare))-without > room {
			f.Note = ""
		}
	} else {
		f.Note = ""
	}
	*budget -= len(mdExec("fold", f))
	return &f
}

// fitSections keeps the sections (each intent's details, worst first, then
// the tool and adoption tables) that fit in budget from the first, and
// counts the others.
func (c *mdComment) fitSections(budget *int) {
	fits := func(name string, data any) bool {
		n := len(mdExec(name, data))
		if n > *budget {
			return false
		}
		*budget -= n
		return true
	}
	kept := 0
	for kept < len(c.worst) && fits("intent details", c.worst[kept]) {
		kept++
	}
	c.Details = c.worst[:kept]
	total := len(c.worst)
	if len(c.Tools) > 0 {
		total++
		if kept == total-1 && fits("tools", c.Tools) {
			c.KeptTools = c.Tools
			kept++
		}
	}
	if len(c.Adopt) > 0 {
		total++
		if kept == total-1 && fits("adoption", c.Adopt) {
			c.KeptAdoption = c.Adopt
			kept++
		}
	}
	if kept < total {
		c.SectionsCut = &mdCut{N: total - kept, Link: c.Link}
	}
}

// markdownTemplates are templates/report.md.tmpl.
var markdownTemplates = texttemplate.Must(texttemplate.New("report.md.tmpl").Funcs(texttemplate.FuncMap{
	"text":     func(s any) string { return mdText(plainText(s)) },
	"html":     func(s any) string { return html.EscapeString(plainText(s)) },
	"code":     func(s string) string { return mdCode(s, false) },
	"cellCode": func(s string) string { return mdCode(s, true) },
	"codeList": mdCodeList,
	"clip":     clipText,
	"plural":   pluralize,
	"times":    showTimes,
}).ParseFS(Templates, "report.md.tmpl"))

// plainText is v, a string or a type of string (a label, a result), as
// text.
func plainText(v any) string {
	switch s := v.(type) {
	case string:
		return s
	case pairbench.Label:
		return string(s)
	}
	return fmt.Sprint(v)
}

// mdExec is the template name of report.md.tmpl run on data. It panics on
// an error: the templates and the views they are given are fixed, and the
// tests run every template.
func mdExec(name string, data any) string {
	var b strings.Builder
	if err := markdownTemplates.ExecuteTemplate(&b, name, data); err != nil {
		panic(fmt.Sprintf("report.md.tmpl: %v", err))
	}
	return b.String()
}

// labelTally is "3 no signal, 277 inconclusive": the labels of intents in
// the order they come (worst first).
func labelTally(intents []*intentView) string {
	var parts []string
	for i := 0; i < len(intents); {
		j := i
		for j < len(intents) && intents[j].Label == intents[i].Label {
			j++
		}
		label := string(intents[i].Label)
		if label == "" {
			label = "unlabelled"
		}
		parts = append(parts, fmt.Sprintf("%d %s", j-i, label))
		i = j
	}
	return strings.Join(parts, ", ")
}

// capMarkdown is the last guard of the limit, for reports whose mandatory
// parts alone (say, a run id of 100 KB) do not fit: it keeps whole lines
// from the start and says the rest was cut.
func capMarkdown(s string, limit int, link string) string {
	if len(s) <= limit {
		return s
	}
	tail := mdExec("rest cut", link)
	keep := limit - len(tail)
	if keep <= 0 {
		tail, keep = "", limit
	}
	cut := strings.LastIndexByte(s[:keep], '\n')
	if cut <= 0 {
		// Not even the first line fits: shorten it on a rune boundary.
		cut = keep
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
	}
	return s[:cut] + tail
}

// mdLink is a Markdown link to the full report, or "" without a URL.
func mdLink(url string) string {
	if url == "" {
		return ""
	}
	// An angle-bracketed destination may hold anything but <, > and line
	// breaks; those are percent-encoded.
	url = strings.NewReplacer("<", "%3C", ">", "%3E", "\n", "%0A", "\r", "%0D").Replace(url)
	return "[full report](<" + url + ">)"
}

// mdEscaper makes plain text render as itself in GitHub Markdown, in a
// table cell or a list item: emphasis, code, HTML, table and math syntax is
// backslash-escaped, link and image syntax is broken at "](" and "][",
// entities are defused, line breaks become spaces, and a word joiner after
// each @ keeps text from mentioning anyone. Plain brackets stay as they are:
// without a link destination or a reference definition (this document has
// none) they are literal text.
var mdEscaper = strings.NewReplacer(
	`\`, `\\`, "`", "\\`", "*", `\*`, "_", `\_`, "<", `\<`, ">", `\>`, "|", `\|`,
	"~", `\~`, "$", `\$`, "](", `]\(`, "][", `]\[`, "&", "&amp;", "@", "@\u2060",
	"\r\n", " ", "\n", " ", "\r", " ",
)

// mdText escapes plain text for Markdown.
func mdText(s string) string { return mdEscaper.Replace(s) }

// mdCode renders s as an inline code span: its text is shown verbatim and
// never mentions anyone or turns into markup. In a table cell, pipes are
// escaped as GitHub's tables require.
func mdCode(s string, inTable bool) string {
	if s == "" {
		return undefDash
	}
	s = strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ").Replace(s)
	if inTable {
		s = strings.ReplaceAll(s, "|", `\|`)
	}
	run, longest := 0, 0
	for _, r := range s {
		if r == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	fence := strings.Repeat("`", longest+1)
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") || strings.HasPrefix(s, " ") && strings.HasSuffix(s, " ") {
		s = " " + s + " "
	}
	return fence + s + fence
}

// clipText shortens s to at most n runes, marking a cut with an ellipsis.
func clipText(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	runes := []rune(s)
	return string(runes[:n-1]) + "…"
}

func pluralize(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

// checkSummaryIntents is the most intents a check run's summary names.
const checkSummaryIntents = 5

// CheckSummary renders r as a check run's summary: the verdict line, the
// worst few intents in the narrow table, and a link to the full report.
// The check run's text holds the whole comment (Markdown). The layout is
// templates/report.md.tmpl's "check summary".
func CheckSummary(r *Report, opts MarkdownOptions) string {
	v := newMarkdownView(r, opts, checkSummaryIntents)
	return capMarkdown(mdExec("check summary", v), MarkdownLimit, v.Link)
}
