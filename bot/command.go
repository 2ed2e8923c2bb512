package bot

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
)

// Verb is a /bench subcommand.
type Verb string

const (
	VerbRun    Verb = "run"
	VerbCancel Verb = "cancel"
	VerbStatus Verb = "status"
	VerbHelp   Verb = "help"
	VerbMore   Verb = "more"
)

// Command is a parsed /bench command.
type Command struct {
	Verb Verb
	// Intents are the intent ids named by /bench run; empty means every
	// intent of the domains the pull request touches.
	Intents []string
	// Pairs is --pairs; 0 means the configured default. For /bench more
	// it is the pairs per intent to add; 0 adds as many as the run has.
	Pairs int
	// Model is --model; "" means the configured default.
	Model string
	// Agent is --agent, the agent benched (pi, claude-code, codex); ""
	// means the backend's default (pi). The bench refuses an agent it does
	// not know, in one line the failure comment quotes.
	Agent string
	// SHA is the commit a "/bench run @<sha>" binds to: 7 to 40 lowercase
	// hex digits. "" means the head, as of when the command was written.
	SHA string
	// Against is --against: AgainstNone benches every domain against no
	// tools; "" (or AgainstChanges) lets the pull request's changes choose
	// each domain's comparison, as an automatic bench does.
	Against string
}

// The values of Command.Against.
const (
	AgainstChanges = "changes"
	AgainstNone    = "none"
)

// Parsed is the outcome of ParseComment: a Command to carry out, or a Reply
// to post instead, or neither, when the comment is not for the bot.
type Parsed struct {
	Command *Command
	Reply   string
}

// Ignored reports whether the comment was not addressed to the bot.
func (p Parsed) Ignored() bool { return p.Command == nil && p.Reply == "" }

// Limits on what a command may ask for.
const (
	MaxPairs          = 1000
	maxCommandIntents = 100
)

var (
	intentPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._/-]{0,199}$`)
	shaArgPattern = regexp.MustCompile(`^@[0-9a-f]{7,40}$`)
	modelPattern  = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:/@+-]{0,199}$`)
	agentPattern  = regexp.MustCompile(`^[a-z][a-z0-9-]{0,39}$`)
)

// Usage is the reply to /bench help.
const Usage = "Usage:\n\n" +
	"```\n" +
	"/bench run [intent ...] [--pairs N] [--model M] [--agent A]   bench this pull request's head commit\n" +
	"/bench run @SHA [intent ...] [...]                            bench commit SHA of this pull request\n" +
	"/bench run --against none [intent ...] [...]                  bench against no tools, whatever changed\n" +
	"/bench more [N]                                               top the head's last run up with N more pairs per intent\n" +
	"/bench cancel                                                 cancel the running bench\n" +
	"/bench status                                                 say what the bench is doing\n" +
	"/bench help                                                   show this help\n" +
	"```\n\n" +
	"`/bench run` with no intents benches every intent of the domains the pull request changes. " +
	"Each domain is benched against the base's tools where the pull request changes them, else against no tools; " +
	"`--against none` benches everything against no tools. " +
	"`/bench more` tops up the head's last finished run, by as many pairs again unless N says. " +
	"`--agent` is `pi` (the default), `claude-code` or `codex`. " +
	"Only people with write access to the repository may run commands."

// ParseComment reads a comment body. The command is the first line of
// prose whose first word is exactly "/bench"; lines in fenced or indented
// code blocks, in block quotes and in HTML comments are not prose (they
// show or quote a command, they do not give one), and a comment without
// such a line is ignored. ParseComment is a pure function: it neither
// checks permissions nor consults the pull request.
func ParseComment(body string) Parsed {
	var args []string
	found := false
	for _, line := range proseLines(body) {
		f := strings.Fields(line)
		if len(f) > 0 && f[0] == "/bench" {
			args, found = f[1:], true
			break
		}
	}
	if !found {
		return Parsed{}
	}
	if len(args) == 0 {
		return Parsed{Reply: Usage}
	}
	verb, rest := Verb(args[0]), args[1:]
	switch verb {
	case VerbRun:
		c, err := parseRun(rest)
		if err != nil {
			return Parsed{Reply: fmt.Sprintf("I could not read that `/bench run`: %v.\n\n%s", err, Usage)}
		}
		return Parsed{Command: c}
	case VerbMore:
		c := &Command{Verb: VerbMore}
		if len(rest) > 1 {
			return Parsed{Reply: fmt.Sprintf("`/bench more` takes at most one argument, the pairs per intent to add (got `%s`).\n\n%s", clipArg(strings.Join(rest, " ")), Usage)}
		}
		if len(rest) == 1 {
			n, err := strconv.Atoi(rest[0])
			if err != nil || n < 1 || n > MaxPairs {
				return Parsed{Reply: fmt.Sprintf("`/bench more %s`: give the pairs per intent to add, a whole number from 1 to %d.\n\n%s", clipArg(rest[0]), MaxPairs, Usage)}
			}
			c.Pairs = n
		}
		return Parsed{Command: c}
	case VerbCancel, VerbStatus, VerbHelp:
		if len(rest) > 0 {
			return Parsed{Reply: fmt.Sprintf("`/bench %s` takes no arguments (got `%s`).\n\n%s", verb, clipArg(strings.Join(rest, " ")), Usage)}
		}
		if verb == VerbHelp {
			return Parsed{Reply: Usage}
		}
		return Parsed{Command: &Command{Verb: verb}}
	}
	return Parsed{Reply: fmt.Sprintf("I do not know `/bench %s`.\n\n%s", clipArg(args[0]), Usage)}
}

// proseLines returns the lines of a Markdown body that are neither code,
// nor quoted, nor inside an HTML comment or a raw HTML block (<pre>,
// <textarea>, <script>, <style>). A line that continues a block quote's
// paragraph without its ">" (a lazy continuation line) is quoted too. It
// errs on the side of ignoring: any line indented by four spaces or a tab
// counts as code.
func proseLines(body string) []string {
	body = stripHTMLComments(strings.ReplaceAll(body, "\r\n", "\n"))
	var out []string
	fence := ""     // the open fence's marker, "" outside a fenced block
	rawEnd := ""    // the closing tag of the open raw HTML block, "" outside one
	quoted := false // the previous line was a block quote's paragraph
	for line := range strings.Lines(body) {
		line = strings.TrimRight(line, "\r\n")
		trimmed := strings.TrimLeft(line, " ")
		indent := len(line) - len(trimmed)
		if fence != "" {
			if indent < 4 && strings.HasPrefix(trimmed, fence) && strings.Trim(trimmed, fence[:1]) == "" {
				fence = ""
			}
			continue
		}
		if rawEnd != "" {
			if strings.Contains(strings.ToLower(line), rawEnd) {
				rawEnd = ""
			}
			continue
		}
		if strings.TrimSpace(line) == "" {
			quoted = false
			continue
		}
		if indent < 4 {
			if m := fenceOpen(trimmed); m != "" {
				fence, quoted = m, false
				continue
			}
			if end := rawHTMLOpen(trimmed); end != "" {
				if !strings.Contains(strings.ToLower(trimmed), end) {
					rawEnd = end
				}
				quoted = false
				continue
			}
		}
		if strings.HasPrefix(trimmed, ">") {
			quoted = strings.TrimLeft(trimmed, "> \t") != ""
			continue
		}
		if quoted || indent >= 4 || strings.HasPrefix(line, "\t") {
			continue
		}
		out = append(out, line)
	}
	return out
}

// rawHTMLOpen returns the closing tag of the raw HTML block a line opens
// (CommonMark's first kind: <pre>, <script>, <style>, <textarea>, whose
// lines are not Markdown until the closing tag), or "".
func rawHTMLOpen(s string) string {
	lower := strings.ToLower(s)
	for _, tag := range []string{"pre", "script", "style", "textarea"} {
		rest, ok := strings.CutPrefix(lower, "<"+tag)
		if ok && (rest == "" || strings.ContainsAny(rest[:1], " \t>")) {
			return "</" + tag + ">"
		}
	}
	return ""
}

// fenceOpen returns the marker of a code fence the line opens (three or
// more backticks or tildes), or "".
func fenceOpen(s string) string {
	for _, c := range []string{"`", "~"} {
		n := len(s) - len(strings.TrimLeft(s, c))
		if n >= 3 {
			return strings.Repeat(c, n)
		}
	}
	return ""
}

// stripHTMLComments removes <!-- ... --> from s; an unclosed comment runs
// to the end, as it does in a browser.
func stripHTMLComments(s string) string {
	var b strings.Builder
	for {
		i := strings.Index(s, "<!--")
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		b.WriteString(s[:i])
		j := strings.Index(s[i+4:], "-->")
		if j < 0 {
			return b.String()
		}
		// Keep the line structure: a comment is not a line break.
		b.WriteString(strings.Repeat("\n", strings.Count(s[i:i+4+j+3], "\n")))
		s = s[i+4+j+3:]
	}
}

// parseRun reads /bench run's arguments; flags and intents may interleave.
func parseRun(args []string) (*Command, error) {
	c := &Command{Verb: VerbRun}
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.IntVar(&c.Pairs, "pairs", 0, "")
	fs.StringVar(&c.Model, "model", "", "")
	fs.StringVar(&c.Agent, "agent", "", "")
	fs.StringVar(&c.Against, "against", "", "")
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, errors.New("there is no -h flag; see the usage below")
			}
			return nil, errors.New(strings.ReplaceAll(err.Error(), "flag provided but not defined", "unknown flag"))
		}
		if fs.NArg() == 0 {
			break
		}
		arg := fs.Arg(0)
		if strings.HasPrefix(arg, "@") {
			if !shaArgPattern.MatchString(arg) || c.SHA != "" {
				return nil, fmt.Errorf("%q is not a commit: write @ and 7 to 40 lowercase hex digits, once", clipArg(arg))
			}
			c.SHA = arg[1:]
			args = fs.Args()[1:]
			continue
		}
		if !intentPattern.MatchString(arg) {
			return nil, fmt.Errorf("%q is not an intent id", clipArg(arg))
		}
		c.Intents = append(c.Intents, arg)
		args = fs.Args()[1:]
	}
	if len(c.Intents) > maxCommandIntents {
		return nil, fmt.Errorf("at most %d intents at once", maxCommandIntents)
	}
	pairsSet := false
	fs.Visit(func(f *flag.Flag) { pairsSet = pairsSet || f.Name == "pairs" })
	if pairsSet && (c.Pairs < 1 || c.Pairs > MaxPairs) {
		return nil, fmt.Errorf("--pairs must be between 1 and %d", MaxPairs)
	}
	if c.Model != "" && !modelPattern.MatchString(c.Model) {
		return nil, fmt.Errorf("%q is not a model name", clipArg(c.Model))
	}
	switch c.Against {
	case "", AgainstChanges:
		c.Against = ""
	case AgainstNone:
	default:
		return nil, fmt.Errorf("--against %q: want none (no tools) or changes (as the pull request's changes choose, the default)", clipArg(c.Against))
	}
	if c.Agent != "" && !agentPattern.MatchString(c.Agent) {
		return nil, fmt.Errorf("%q is not an agent name (pi, claude-code or codex)", clipArg(c.Agent))
	}
	return c, nil
}

// clipArg shortens an argument for quoting in a reply.
func clipArg(s string) string {
	const max = 40
	s = strings.ToValidUTF8(strings.ReplaceAll(s, "`", "'"), "?")
	if r := []rune(s); len(r) > max {
		return string(r[:max]) + "…"
	}
	return s
}
