package stats

import (
	"fmt"
	"html"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// MarkdownLimit is the most bytes WriteMarkdown writes (and so the most
// characters): below 60,000, which leaves room under GitHub's 65,536-character
// comment limit for whatever a bot adds around the report.
const MarkdownLimit = 59_000

// chartMaxIntents is the most intents the Mermaid speed chart shows; past
// that its bars are too thin to read and the HTML report's plot is better.
const chartMaxIntents = 40

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

// Markdown renders r for a pull-request comment: a one-line verdict first,
// then a table with one row per intent (worst label first past
// manyIntents intents), a Mermaid chart of the speedups,
// each intent's details folded in <details>, the tool failure and adoption
// tables, and a footer with the run-level checks.
//
// The result never exceeds the limit in opts. When everything does not fit,
// the parts a reader needs least go first: tool and adoption tables, then
// intent details from the last, then the chart, then summary rows from the
// last; each cut is announced with a link to the full report. The verdict
// line always stays first. Text that comes from rows or plans (intent and
// tool names, error messages) is escaped so that it renders as text.
func Markdown(r *Report, opts MarkdownOptions) string {
	limit := opts.Limit
	if limit <= 0 || limit > MarkdownLimit {
		limit = MarkdownLimit
	}
	v := newView(r)
	link := mdLink(opts.FullReportURL)

	head := mdHead(v)
	if v.Many {
		// Past one screen of rows, what needs a reviewer comes first; the
		// rows cut for room are then the least pressing.
		sorted := make([]intentView, 0, len(v.Intents))
		for _, in := range worstFirst(v.Intents) {
			sorted = append(sorted, *in)
		}
		v.Intents = sorted
		head += fmt.Sprintf("_%d intents, worst label first._\n\n", v.Total)
	}
	tableHead := "| intent | label | n | control correct | treatment correct | Δ accuracy | discordant pairs won by treatment | Holm p accuracy | speedup | Holm p speed | adoption |\n" +
		"|---|---|--:|---|---|---|---|---|---|---|---|\n"
	rows := make([]string, len(v.Intents))
	for i := range v.Intents {
		rows[i] = mdSummaryRow(&v.Intents[i])
	}
	note := "\n" + speedNote + " " + holmNote + "\n\n"
	footer := mdFooter(v, link)

	// The notes announcing cuts are counted at their longest, so whatever
	// is chosen below fits with them.
	rowsNote := func(n int) string {
		return fmt.Sprintf("\n_%d more %s, and every intent's details, did not fit in this comment; %s._\n", n, pluralize(n, "intent"), seeFull(link))
	}
	cutNote := func(n int) string {
		return fmt.Sprintf("_%d %s did not fit in this comment; %s._\n\n", n, pluralize(n, "section"), seeFull(link))
	}
	budget := limit - len(head) - len(tableHead) - len(note) - len(footer) - len(rowsNote(len(rows))) - len(cutNote(len(rows)+2))

	var b strings.Builder
	b.Grow(min(limit, 1<<16))
	b.WriteString(head)
	b.WriteString(tableHead)
	shown := 0
	for _, row := range rows {
		if len(row) > budget {
			break
		}
		budget -= len(row)
		b.WriteString(row)
		shown++
	}
	if shown < len(rows) {
		b.WriteString(rowsNote(len(rows) - shown))
	}
	b.WriteString(note)

	if shown == len(rows) {
		if chart := mdChart(v); len(chart) <= budget {
			budget -= len(chart)
			b.WriteString(chart)
		}
		b.WriteString(mdDetailsPart(v, budget, cutNote))
	}
	b.WriteString(footer)
	return capMarkdown(b.String(), limit, link)
}

// mdDetailsPart is the "Details" part: every intent's details, then the
// tool and adoption tables, as many as fit in budget bytes from the first,
// and cutNote for the sections left out.
func mdDetailsPart(v reportView, budget int, cutNote func(int) string) string {
	sections := make([]string, 0, len(v.Intents)+2)
	for i := range v.Intents {
		sections = append(sections, mdDetails(&v.Intents[i]))
	}
	if t := mdTools(v.Tools); t != "" {
		sections = append(sections, t)
	}
	if a := mdAdoption(v.Adopt); a != "" {
		sections = append(sections, a)
	}
	if len(sections) == 0 {
		return ""
	}
	const heading = "### Details\n\n"
	budget -= len(heading)
	var b strings.Builder
	kept := 0
	for _, s := range sections {
		if len(s) > budget {
			break
		}
		budget -= len(s)
		if kept == 0 {
			b.WriteString(heading)
		}
		b.WriteString(s)
		kept++
	}
	if kept < len(sections) {
		b.WriteString(cutNote(len(sections) - kept))
	}
	return b.String()
}

// capMarkdown is the last guard of the limit, for reports whose mandatory
// parts alone (say, a run id of 100 KB) do not fit: it keeps whole lines
// from the start and says the rest was cut.
func capMarkdown(s string, limit int, link string) string {
	if len(s) <= limit {
		return s
	}
	tail := fmt.Sprintf("\n\n_The rest of this report did not fit in a comment; %s._\n", seeFull(link))
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

func seeFull(link string) string {
	if link == "" {
		return "the full report is report.html in the run directory"
	}
	return "see the " + link
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

func mdHead(v reportView) string {
	var b strings.Builder
	if v.Total == 0 {
		b.WriteString("**pairbench verdict: none**: no intents in this run")
	} else {
		fmt.Fprintf(&b, "**pairbench verdict: %s** (worst of %d %s: %s)", mdText(string(v.Verdict)), v.Total, pluralize(v.Total, "intent"), mdText(v.Counts))
	}
	if v.Scripted {
		b.WriteString(" · **scripted model, not an LLM**")
	}
	b.WriteString("\n\n")
	fmt.Fprintf(&b, "Run %s", mdCode(clipText(v.RunID, 200), false))
	if v.Agent != "" {
		fmt.Fprintf(&b, " · agent %s", mdCode(clipText(v.Agent, 200), false))
	}
	fmt.Fprintf(&b, " · model %s", mdCode(clipText(v.Model, 200), false))
	if v.Source != "" {
		fmt.Fprintf(&b, " · registry %s", mdText(clipText(v.Source, 300)))
	}
	b.WriteString("\n\n")
	if v.Scripted {
		b.WriteString("> [!WARNING]\n> " + mdText(scriptedNote) + "\n\n")
	}
	return b.String()
}

func mdSummaryRow(in *intentView) string {
	cells := []string{
		mdCode(clipText(in.ID, 120), true),
		"**" + mdText(string(in.Label)) + "**",
		strconv.Itoa(in.N),
		in.Control, in.Treatment, in.Delta, in.Share, in.PAccuracy, in.Speedup, in.PSpeed, in.Adoption,
	}
	for i := 3; i < len(cells); i++ {
		cells[i] = mdText(cells[i])
	}
	return "| " + strings.Join(cells, " | ") + " |\n"
}

// mdChart is a Mermaid bar chart of each intent's ratio of medians, with a
// line at 1× (no difference), or "" when no intent has speed.
func mdChart(v reportView) string {
	var names, bars []string
	top := 2.0
	for _, in := range v.Intents {
		if in.SpeedupIv == nil || isUndef(in.SpeedupIv.Est) || math.IsInf(in.SpeedupIv.Est, 0) {
			continue
		}
		est := in.SpeedupIv.Est
		names = append(names, `"`+mermaidText(in.ID)+`"`)
		bars = append(bars, strconv.FormatFloat(est, 'f', 2, 64))
		top = max(top, est)
	}
	if len(names) == 0 {
		return ""
	}
	if len(names) > chartMaxIntents {
		return fmt.Sprintf("_The speedup chart is left out: %d intents are too many to read in a comment; the full report plots them all._\n\n", len(names))
	}
	ones := strings.TrimSuffix(strings.Repeat("1, ", len(names)), ", ")
	return "```mermaid\nxychart-beta\n" +
		"    title \"Typical speedup per intent (1 = no difference)\"\n" +
		"    x-axis [" + strings.Join(names, ", ") + "]\n" +
		fmt.Sprintf("    y-axis \"speedup (×)\" 0 --> %s\n", strconv.FormatFloat(math.Ceil(top*1.1*2)/2, 'f', 1, 64)) +
		"    bar [" + strings.Join(bars, ", ") + "]\n" +
		"    line [" + ones + "]\n```\n\n"
}

// mermaidText keeps the characters a Mermaid label can hold safely.
func mermaidText(s string) string {
	s = strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', strings.ContainsRune("-_.:/ ", r):
			return r
		}
		return '_'
	}, s)
	return clipText(s, 40)
}

func mdDetails(in *intentView) string {
	var b strings.Builder
	fmt.Fprintf(&b, "<details><summary><code>%s</code> · %s</summary>\n\n", html.EscapeString(clipText(in.ID, 120)), html.EscapeString(string(in.Label)))
	for _, f := range in.Facts {
		fmt.Fprintf(&b, "- **%s:** %s\n", mdText(f.Name), mdText(f.Text))
	}
	b.WriteString("\n| | control | treatment |\n|---|---|---|\n")
	for _, a := range in.Arms {
		fmt.Fprintf(&b, "| %s | %s | %s |\n", mdText(a.Name), mdText(a.Control), mdText(a.Treatment))
	}
	b.WriteString("\n</details>\n\n")
	return b.String()
}

func mdTools(tools []toolView) string {
	if len(tools) == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "<details><summary>WebMCP tool calls and failures (%d %s)</summary>\n\n", len(tools), pluralize(len(tools), "tool"))
	b.WriteString("| domain | tool | registered | calls | failures | most common errors |\n|---|---|---|--:|--:|---|\n")
	for _, t := range tools {
		errs := make([]string, 0, len(t.Errors))
		for _, e := range t.Errors {
			errs = append(errs, fmt.Sprintf("%s ×%d", mdCode(clipText(e.Error, 160), true), e.Count))
		}
		reg := "no (page's own)"
		switch {
		case t.NotRegistered > 0:
			reg = fmt.Sprintf("yes, but did not register in %d %s", t.NotRegistered, pluralize(t.NotRegistered, "trial"))
		case t.Registered:
			reg = "yes"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %d | %d | %s |\n", mdCode(clipText(t.Domain, 80), true), mdCode(clipText(t.Tool, 80), true), reg, t.Calls, t.Failures, orDash(strings.Join(errs, "; ")))
	}
	b.WriteString("\n</details>\n\n")
	return b.String()
}

func mdAdoption(rows []adoptionView) string {
	if len(rows) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("<details><summary>Adoption stage (treatment-only trials before any pair)</summary>\n\n")
	b.WriteString("| domain | scored trials | used a registered tool | aborted |\n|---|--:|--:|--:|\n")
	for _, a := range rows {
		fmt.Fprintf(&b, "| %s | %d | %d | %d |\n", mdCode(clipText(a.Domain, 80), true), a.Trials, a.Adopted, a.Aborted)
	}
	b.WriteString("\n</details>\n\n")
	return b.String()
}

func mdFooter(v reportView, link string) string {
	var b strings.Builder
	b.WriteString("### Run checks\n\n")
	for _, f := range v.Footer {
		fmt.Fprintf(&b, "- **%s:** %s\n", mdText(f.Name), mdText(clipText(f.Text, 2000)))
	}
	if link != "" {
		fmt.Fprintf(&b, "- **Full report:** %s\n", link)
	}
	return b.String()
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
