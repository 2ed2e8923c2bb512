package bot

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/google/go-github/v66/github"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/stats"
)

// MaxCommentChars is GitHub's limit on a comment body.
const MaxCommentChars = 65536

// Markers hidden in the sticky comment: the first finds it again, the
// second carries its verdict history (base64 JSON, so no "-->" can occur).
const (
	stickyMarker  = "<!-- pairbench:rollup -->"
	historyPrefix = "<!-- pairbench:history "
	historySuffix = " -->"
	// maxHistory bounds the earlier verdicts kept.
	maxHistory = 50
)

// LabelPrefix starts the one label the bot keeps on a pull request.
const LabelPrefix = "bench: "

// Target is the pull request a verdict is about.
type Target struct {
	Owner, Repo string
	PR          int
	SHA         string // the head commit benched
}

// Verdict is a finished bench to post.
type Verdict struct {
	RunID  RunID
	Report *stats.Report
	// Link is where the full report can be read ("" for none).
	Link string
}

// PostVerdict writes a bench's verdict on the pull request: it creates or
// edits the one sticky rollup comment (earlier commits' verdicts folded
// below the new one) and sets the one "bench: <label>" label, replacing
// other "bench: " labels. It needs a client allowed to write issues and
// pull requests; the GitHub Action calls it with its plain token.
func PostVerdict(ctx context.Context, c *github.Client, t Target, v Verdict) error {
	e := entry{SHA: t.SHA, Run: string(v.RunID), Verdict: string(v.Report.Verdict), Link: v.Link}
	if err := upsertSticky(ctx, c, t, e, func(limit int) string {
		return stats.Markdown(v.Report, stats.MarkdownOptions{FullReportURL: v.Link, Limit: limit})
	}); err != nil {
		return err
	}
	if v.Report.Verdict == "" {
		return nil
	}
	return SetLabel(ctx, c, t, v.Report.Verdict)
}

// PostFailure writes, in the sticky rollup comment, that the bench of
// t.SHA failed and why. Labels are left as they are.
func PostFailure(ctx context.Context, c *github.Client, t Target, run RunID, reason string) error {
	e := entry{SHA: t.SHA, Run: string(run), Failed: true}
	return upsertSticky(ctx, c, t, e, func(int) string {
		return fmt.Sprintf("**The bench of `%s` failed; there is no verdict.**\n\n%s\n\nA maintainer can comment `/bench run` to try again.\n",
			short(t.SHA), quoteReason(reason))
	})
}

// quoteReason renders a failure reason as a block quote, clipped.
func quoteReason(reason string) string {
	const max = 4000
	if len(reason) > max {
		reason = strings.ToValidUTF8(reason[:max], "") + "…"
	}
	return "> " + strings.ReplaceAll(strings.TrimSpace(reason), "\n", "\n> ")
}

// entry is one verdict in the sticky comment's history.
type entry struct {
	SHA     string `json:"sha"`
	Run     string `json:"run"`
	Verdict string `json:"verdict,omitempty"`
	Failed  bool   `json:"failed,omitempty"`
	Link    string `json:"link,omitempty"`
}

// upsertSticky finds the sticky comment (a Bot's comment holding the
// marker) and edits it, or creates it.
func upsertSticky(ctx context.Context, c *github.Client, t Target, cur entry, body func(limit int) string) error {
	old, err := findSticky(ctx, c, t)
	if err != nil {
		return err
	}
	var history []entry
	if old != nil {
		history = readHistory(old.GetBody())
	}
	// The entry for the same commit is replaced; others are kept, newest first.
	kept := []entry{cur}
	for _, e := range history {
		if e.SHA != cur.SHA && len(kept) <= maxHistory {
			kept = append(kept, e)
		}
	}
	text := renderSticky(t, kept, body)
	if old != nil {
		if _, _, err := c.Issues.EditComment(ctx, t.Owner, t.Repo, old.GetID(), &github.IssueComment{Body: &text}); err != nil {
			return fmt.Errorf("edit rollup comment %d on %s/%s#%d: %w", old.GetID(), t.Owner, t.Repo, t.PR, err)
		}
		return nil
	}
	if _, _, err := c.Issues.CreateComment(ctx, t.Owner, t.Repo, t.PR, &github.IssueComment{Body: &text}); err != nil {
		return fmt.Errorf("create rollup comment on %s/%s#%d: %w", t.Owner, t.Repo, t.PR, err)
	}
	return nil
}

// findSticky returns the sticky comment, or nil. Only comments by a bot
// count, so a person quoting the marker cannot capture the rollup.
func findSticky(ctx context.Context, c *github.Client, t Target) (*github.IssueComment, error) {
	opts := &github.IssueListCommentsOptions{ListOptions: github.ListOptions{PerPage: 100}}
	for {
		comments, resp, err := c.Issues.ListComments(ctx, t.Owner, t.Repo, t.PR, opts)
		if err != nil {
			return nil, fmt.Errorf("list comments on %s/%s#%d: %w", t.Owner, t.Repo, t.PR, err)
		}
		for _, cm := range comments {
			if cm.GetUser().GetType() == "Bot" && strings.HasPrefix(cm.GetBody(), stickyMarker) {
				return cm, nil
			}
		}
		if resp.NextPage == 0 {
			return nil, nil
		}
		opts.Page = resp.NextPage
	}
}

// readHistory decodes the history marker of a sticky comment body; a body
// without a readable one has no history.
func readHistory(body string) []entry {
	i := strings.LastIndex(body, historyPrefix)
	if i < 0 {
		return nil
	}
	rest := body[i+len(historyPrefix):]
	j := strings.Index(rest, historySuffix)
	if j < 0 {
		return nil
	}
	data, err := base64.StdEncoding.DecodeString(rest[:j])
	var es []entry
	if err != nil || json.Unmarshal(data, &es) != nil {
		return nil
	}
	return es
}

// renderSticky lays out the comment: marker, heading, the current body,
// earlier verdicts folded, and the history marker. It never exceeds
// MaxCommentChars: earlier verdicts go first, oldest first, then the body
// is asked to fit in what remains.
func renderSticky(t Target, es []entry, body func(limit int) string) string {
	cur := es[0]
	heading := fmt.Sprintf("%s\n### pairbench: `%s`\n\n", stickyMarker, short(t.SHA))
	if cur.Run != "" {
		heading = fmt.Sprintf("%s\n### pairbench: `%s` (run `%s`)\n\n", stickyMarker, short(t.SHA), cur.Run)
	}
	const bodyRoom = stats.MarkdownLimit
	for {
		tail := renderEarlier(es[1:]) + renderHistory(es)
		room := MaxCommentChars - len(heading) - len(tail)
		if room >= bodyRoom || len(es) == 1 {
			b := body(min(room, bodyRoom))
			if len(heading)+len(b)+len(tail) > MaxCommentChars {
				b = clipBytes(b, MaxCommentChars-len(heading)-len(tail))
			}
			return heading + b + tail
		}
		es = es[:len(es)-1]
	}
}

// clipBytes cuts s to at most n bytes on a rune boundary.
func clipBytes(s string, n int) string {
	if n <= 0 {
		return ""
	}
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "")
}

func renderEarlier(es []entry) string {
	if len(es) == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n<details><summary>Earlier commits (%d)</summary>\n\n| commit | verdict | report |\n|---|---|---|\n", len(es))
	for _, e := range es {
		verdict := e.Verdict
		if e.Failed {
			verdict = "failed"
		}
		if verdict == "" {
			verdict = "no intents"
		}
		report := "—"
		if e.Link != "" {
			report = fmt.Sprintf("[%s](%s)", e.Run, e.Link)
		} else if e.Run != "" {
			report = "`" + e.Run + "`"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", short(e.SHA), verdict, report)
	}
	b.WriteString("\n</details>\n")
	return b.String()
}

func renderHistory(es []entry) string {
	data, _ := json.Marshal(es) // entries are plain strings and bools
	return "\n" + historyPrefix + base64.StdEncoding.EncodeToString(data) + historySuffix + "\n"
}

// labelColors are the colours of the bench labels, by verdict.
var labelColors = map[pairbench.Label]string{
	pairbench.Better:       "1a7f37",
	pairbench.MoreAccurate: "2da44e",
	pairbench.Faster:       "4ac26b",
	pairbench.Inconclusive: "d4c5f9",
	pairbench.NoSignal:     "e1e4e8",
	pairbench.NoAdoption:   "fbca04",
	pairbench.Mixed:        "f9d0c4",
	pairbench.Slower:       "e99695",
	pairbench.LessAccurate: "cf222e",
}

// SetLabel puts "bench: <label>" on the pull request, creating the
// repository label with its colour if missing, and removes every other
// "bench: " label.
func SetLabel(ctx context.Context, c *github.Client, t Target, label pairbench.Label) error {
	name := LabelPrefix + string(label)
	var have bool
	opts := &github.ListOptions{PerPage: 100}
	for {
		labels, resp, err := c.Issues.ListLabelsByIssue(ctx, t.Owner, t.Repo, t.PR, opts)
		if err != nil {
			return fmt.Errorf("list labels on %s/%s#%d: %w", t.Owner, t.Repo, t.PR, err)
		}
		for _, l := range labels {
			switch {
			case l.GetName() == name:
				have = true
			case strings.HasPrefix(l.GetName(), LabelPrefix):
				if _, err := c.Issues.RemoveLabelForIssue(ctx, t.Owner, t.Repo, t.PR, l.GetName()); err != nil && !isNotFound(err) {
					return fmt.Errorf("remove label %q: %w", l.GetName(), err)
				}
			}
		}
		if resp.NextPage == 0 {
			break
		}
		opts.Page = resp.NextPage
	}
	if have {
		return nil
	}
	color := labelColors[label]
	if color == "" {
		color = "ededed"
	}
	desc := "pairbench verdict on this pull request's tools"
	_, _, err := c.Issues.CreateLabel(ctx, t.Owner, t.Repo, &github.Label{Name: &name, Color: &color, Description: &desc})
	if err != nil && !isAlreadyExists(err) {
		return fmt.Errorf("create label %q: %w", name, err)
	}
	if err := addLabel(ctx, c, t, name); err != nil {
		return fmt.Errorf("add label %q to %s/%s#%d: %w", name, t.Owner, t.Repo, t.PR, err)
	}
	return nil
}

// addLabel adds a label to an issue with the body GitHub's description
// defines, {"labels": [...]}. go-github's AddLabelsToIssue sends a bare
// array, which GitHub accepts but its description does not allow.
func addLabel(ctx context.Context, c *github.Client, t Target, name string) error {
	u := fmt.Sprintf("repos/%s/%s/issues/%d/labels", url.PathEscape(t.Owner), url.PathEscape(t.Repo), t.PR)
	req, err := c.NewRequest(http.MethodPost, u, map[string][]string{"labels": {name}})
	if err != nil {
		return err
	}
	_, err = c.Do(ctx, req, nil)
	return err
}

// isAlreadyExists reports whether err is GitHub's 422 for a resource that
// exists.
func isAlreadyExists(err error) bool {
	var e *github.ErrorResponse
	if !errors.As(err, &e) || e.Response == nil || e.Response.StatusCode != http.StatusUnprocessableEntity {
		return false
	}
	for _, x := range e.Errors {
		if x.Code == "already_exists" {
			return true
		}
	}
	return false
}
