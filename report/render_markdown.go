package report

import (
	"fmt"
	"html"
	"io"
	"strings"
	"unicode/utf8"
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
func Markdown(r *Report, opts MarkdownOptions) string {
	limit := opts.Limit
	if limit <= 0 || limit > MarkdownLimit {
		limit = MarkdownLimit
	}
	v := newView(r)
	link := mdLink(opts.FullReportURL)
	intents := worstFirst(v.Intents)
	top, rest := intents[:min(len(intents), firstScreen)], intents[min(len(intents), firstScreen):]

	var must strings.Builder
	must.WriteString(mdVerdictLine(v))
	must.WriteString(mdArms(r))
	if len(top) > 0 {
		must.WriteString(narrowHead)
		for _, in := range top {
			must.WriteString(mdNarrowRow(in))
		}
		if len(rest) > 0 {
			fmt.Fprintf(&must, "\n_%d more %s below (%s)._\n", len(rest), pluralize(len(rest), "intent"), labelTally(rest))
		}
		must.WriteString("\n" + narrowNote + "\n")
	}
	must.WriteString("\n" + mdRunLine(v, link))
	footer := mdFooter(v, link)

	// The optional parts, most wanted first. Each is a fold of rows, kept
	// whole, cut row by row, or left out; cutNote (counted at its longest)
	// says what was left out.
	cutNote := func(n int) string {
		return fmt.Sprintf("_%d %s did not fit in this comment; %s._\n\n", n, pluralize(n, "section"), seeFull(link))
	}
	budget := limit - must.Len() - len(footer) - len(cutNote(len(intents)+4))

	var b strings.Builder
	b.Grow(min(limit, 1<<16))
	b.WriteString(must.String())
	if len(rest) > 0 {
		rows := make([]string, len(rest))
		for i, in := range rest {
			rows[i] = mdNarrowRow(in)
		}
		b.WriteString(mdFold(fmt.Sprintf("The other %d %s, worst first", len(rest), pluralize(len(rest), "intent")), narrowHead, rows, "", &budget, link))
	}
	if len(intents) > 0 {
		rows := make([]string, len(intents))
		for i, in := range intents {
			rows[i] = mdFiguresRow(in)
		}
		b.WriteString(mdFold("Every figure: correct per arm, intervals, Holm-adjusted p values, adoption", figuresHead, rows, "\n"+speedNote+" "+holmNote+"\n", &budget, link))
	}
	b.WriteString(mdSections(v, intents, &budget, cutNote))
	b.WriteString(footer)
	return capMarkdown(b.String(), limit, link)
}

// The narrow table: five columns that fit a pull request's width.
const narrowHead = "| intent | label | Δ accuracy | speedup | pairs |\n|---|---|--:|--:|--:|\n"

const narrowNote = "_Δ accuracy: treatment's share correct minus control's. Speedup: the typical ratio of control's time to treatment's over pairs where both were correct (above 1× treatment was faster). Pairs: complete pairs (of those planned). Intervals and p values are folded below._"

// narrowIDLen is the most characters of an intent id the narrow table shows.
const narrowIDLen = 40

func mdNarrowRow(in *intentView) string {
	speed := undefDash
	if in.SpeedupIv != nil {
		speed = showTimes(in.SpeedupIv.Est)
	}
	pairs := fmt.Sprint(in.N)
	if in.Planned > in.N {
		pairs = fmt.Sprintf("%d/%d", in.N, in.Planned)
	}
	return "| " + strings.Join([]string{
		mdCode(clipText(in.ID, narrowIDLen), true),
		mdLabel(in),
		mdText(in.Delta), mdText(speed), pairs,
	}, " | ") + " |\n"
}

// mdLabel is an intent's label in bold, marked when the intent is a
// placebo.
func mdLabel(in *intentView) string {
	l := "**" + mdText(string(in.Label)) + "**"
	if in.Placebo {
		l += " (" + placeboMark + ")"
	}
	return l
}

// The figures table: every summary figure, folded.
const figuresHead = "| intent | label | n | control correct | treatment correct | Δ accuracy | discordant pairs won by treatment | Holm p accuracy | speedup | Holm p speed | adoption |\n" +
	"|---|---|--:|---|---|---|---|---|---|---|---|\n"

func mdFiguresRow(in *intentView) string {
	cells := []string{
		mdCode(clipText(in.ID, 120), true),
		mdLabel(in),
		fmt.Sprint(in.N),
		in.Control, in.Treatment, in.Delta, in.Share, in.PAccuracy, in.Speedup, in.PSpeed, in.Adoption,
	}
	for i := 3; i < len(cells); i++ {
		cells[i] = mdText(cells[i])
	}
	return "| " + strings.Join(cells, " | ") + " |\n"
}

// mdFold is a <details> fold titled summary holding a table (head, then as
// many rows as fit in budget), then tail when every row fitted. Rows that
// do not fit are counted in a line linking the full report; a fold with no
// room for a single row is left out. budget is reduced by what is written.
func mdFold(summary, head string, rows []string, tail string, budget *int, link string) string {
	open := "<details><summary>" + html.EscapeString(summary) + "</summary>\n\n"
	const closing = "\n</details>\n\n"
	cut := func(n int) string {
		return fmt.Sprintf("\n_%d more %s did not fit in this comment; %s._\n", n, pluralize(n, "row"), seeFull(link))
	}
	room := *budget - len(open) - len(head) - len(closing) - len(cut(len(rows)))
	if len(rows) == 0 || room < len(rows[0]) {
		return ""
	}
	var b strings.Builder
	b.WriteString(open + head)
	shown := 0
	for _, row := range rows {
		if len(row) > room {
			break
		}
		room -= len(row)
		b.WriteString(row)
		shown++
	}
	switch {
	case shown < len(rows):
		b.WriteString(cut(len(rows) - shown))
	case len(tail) <= room:
		b.WriteString(tail)
	}
	b.WriteString(closing)
	*budget -= b.Len()
	return b.String()
}

// mdSections are each intent's details, then the tool and adoption tables,
// as many as fit in budget from the first, and cutNote for the sections
// left out.
func mdSections(v reportView, intents []*intentView, budget *int, cutNote func(int) string) string {
	sections := make([]string, 0, len(intents)+2)
	for _, in := range intents {
		sections = append(sections, mdDetails(in))
	}
	if t := mdTools(v.Tools); t != "" {
		sections = append(sections, t)
	}
	if a := mdAdoption(v.Adopt); a != "" {
		sections = append(sections, a)
	}
	var b strings.Builder
	kept := 0
	for _, s := range sections {
		if len(s) > *budget {
			break
		}
		*budget -= len(s)
		b.WriteString(s)
		kept++
	}
	if kept < len(sections) {
		b.WriteString(cutNote(len(sections) - kept))
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
		parts = append(parts, fmt.Sprintf("%d %s", j-i, mdText(label)))
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

// mdVerdictLine is the comment's first line: the verdict and the label
// counts, or, for a run with pairs still to run, that it is incomplete and
// has no verdict yet.
func mdVerdictLine(v reportView) string {
	var s string
	switch {
	case v.Incomplete != "":
		s = "**pairbench: incomplete run, no verdict**: " + mdText(v.Incomplete)
		if v.Total > 0 {
			s += fmt.Sprintf("; so far worst of %d %s: %s", v.Total, pluralize(v.Total, "intent"), mdText(v.Counts))
		}
	case v.Total == 0:
		return "**pairbench verdict: none**: no intents in this run\n\n"
	default:
		if h := v.Headline; h.Pooled != "" {
			s = fmt.Sprintf("**pairbench verdict: %s** (%s; per intent: %s)", mdText(string(v.Verdict)), h.Pooled, mdText(v.Counts))
		} else {
			s = fmt.Sprintf("**pairbench verdict: %s** (worst of %d %s: %s)", mdText(string(v.Verdict)), v.Total, pluralize(v.Total, "intent"), mdText(v.Counts))
		}
	}
	if v.Scripted {
		s += " · **scripted model, not an LLM**"
	}
	s += "\n\n"
	if v.Incomplete == "" {
		s += mdHeadline(v.Headline)
	}
	return s
}

// mdHeadline says what the verdict rests on: a suspect harness first.
func mdHeadline(h headlineView) string {
	var s string
	if h.Suspect != "" {
		s += "**Harness suspect:** " + mdText(h.Suspect) + ".\n\n"
	}
	if h.Why != "" {
		line := mdText(h.Why)
		if h.Figures != "" {
			line += " (" + mdText(h.Figures) + ")"
		}
		s += line + ".\n\n"
	}
	if h.Claims != "" {
		s += mdText(h.Claims) + "\n\n"
	}
	return s
}

// mdRunNames names the run, the agent and model benched, and the registry.
func mdRunNames(v reportView) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Run %s", mdCode(clipText(v.RunID, 200), false))
	if v.Agent != "" {
		fmt.Fprintf(&b, " · agent %s", mdCode(clipText(v.Agent, 200), false))
	}
	fmt.Fprintf(&b, " · model %s", mdCode(clipText(v.Model, 200), false))
	if v.Source != "" {
		fmt.Fprintf(&b, " · registry %s", mdText(clipText(v.Source, 300)))
	}
	return b.String()
}

// mdRunLine is mdRunNames with a link to the full report, and warns about
// an incomplete run, a forced resume and a scripted model.
func mdRunLine(v reportView, link string) string {
	var b strings.Builder
	b.WriteString(mdRunNames(v))
	if link != "" {
		b.WriteString(" · " + link)
	}
	b.WriteString("\n\n")
	if v.Incomplete != "" {
		b.WriteString("> [!WARNING]\n> " + mdText(incompleteNote) + "\n\n")
	}
	if len(v.Forced) > 0 {
		b.WriteString("> [!CAUTION]\n> " + mdText(forcedNote) + "\n")
		for _, f := range v.Forced {
			b.WriteString("> - " + mdText(clipText(f, 500)) + "\n")
		}
		b.WriteString("\n")
	}
	if v.Looks != "" {
		b.WriteString("> [!NOTE]\n> " + mdText(v.Looks) + "\n\n")
	}
	if v.Scripted {
		b.WriteString("> [!WARNING]\n> " + mdText(scriptedNote) + "\n\n")
	}
	b.WriteString(mdMixedWebMCP(v))
	return b.String()
}

// mdMixedWebMCP flags a run whose trials ran on both the browser's own
// WebMCP and the polyfill; "" for any other.
func mdMixedWebMCP(v reportView) string {
	if v.MixedWebMCP == "" {
		return ""
	}
	return "> [!WARNING]\n> **Mixed WebMCP.** " + mdText(v.MixedWebMCP) + "\n\n"
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

// mdFooter is the run checks, folded.
func mdFooter(v reportView, link string) string {
	var b strings.Builder
	b.WriteString("<details><summary>Run checks</summary>\n\n")
	for _, f := range v.Footer {
		fmt.Fprintf(&b, "- **%s:** %s\n", mdText(f.Name), mdText(clipText(f.Text, 2000)))
	}
	if link != "" {
		fmt.Fprintf(&b, "- **Full report:** %s\n", link)
	}
	b.WriteString("\n</details>\n")
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

// checkSummaryIntents is the most intents a check run's summary names.
const checkSummaryIntents = 5

// CheckSummary renders r as a check run's summary: the verdict line, the
// worst few intents in the narrow table, and a link to the full report.
// The check run's text holds the whole comment (Markdown).
func CheckSummary(r *Report, opts MarkdownOptions) string {
	v := newView(r)
	link := mdLink(opts.FullReportURL)
	intents := worstFirst(v.Intents)
	var b strings.Builder
	b.WriteString(mdVerdictLine(v))
	b.WriteString(mdArms(r))
	b.WriteString(mdRunNames(v) + "\n\n")
	b.WriteString(mdMixedWebMCP(v))
	if len(intents) > 0 {
		shown := intents[:min(len(intents), checkSummaryIntents)]
		b.WriteString(narrowHead)
		for _, in := range shown {
			b.WriteString(mdNarrowRow(in))
		}
		if rest := intents[len(shown):]; len(rest) > 0 {
			fmt.Fprintf(&b, "\n_%d more %s (%s): every intent and figure is in the text below._\n", len(rest), pluralize(len(rest), "intent"), labelTally(rest))
		}
		b.WriteString("\n")
	}
	if link != "" {
		b.WriteString("Read the " + link + ": every pair, side by side.\n")
	}
	return capMarkdown(b.String(), MarkdownLimit, link)
}
