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
	"sync"

	"github.com/google/go-github/v66/github"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/report"
)

// MaxCommentChars is GitHub's limit on a comment body.
const MaxCommentChars = 65536

// Markers hidden in the bot's comments. markerPrefix starts every one, so
// the bot never reads a comment of its own as a command; stickyMarker finds
// the rollup again, and the history marker carries its verdict history as
// JSON (json.Marshal escapes <, > and &, so no "-->" can occur).
const (
	markerPrefix   = "<!-- pairbench:"
	stickyMarker   = "<!-- pairbench:rollup -->"
	approvalMarker = "<!-- pairbench:approval -->"
	historyPrefix  = "<!-- pairbench:history "
	historySuffix  = " -->"
	// maxHistory bounds the earlier verdicts kept; minEarlier of them are
	// always shown, whatever the length of their links: the report gives
	// up room first.
	maxHistory = 50
	minEarlier = 10
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
	Report *report.Report
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
	if err := upsertHistorySticky(ctx, c, t, e, func(limit int) string {
		return report.Markdown(v.Report, report.MarkdownOptions{FullReportURL: v.Link, Limit: limit})
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
	return upsertHistorySticky(ctx, c, t, e, func(int) string { return failureText(t.SHA, reason) })
}

func failureText(sha, reason string) string {
	advice := "\n\nA maintainer can comment `/bench run` to try again."
	if strings.Contains(reason, noRerun) {
		advice = ""
	}
	return fmt.Sprintf("**The bench of `%s` failed; there is no verdict.**\n\n%s%s\n", short(sha), quoteReason(reason), advice)
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

// upsertHistorySticky is the rollup of a poster without a database (the
// GitHub Action): the history lives in the comment's hidden marker. It finds
// the sticky comment among the token's own comments and edits it, or
// creates it.
func upsertHistorySticky(ctx context.Context, c *github.Client, t Target, cur entry, body func(limit int) string) error {
	self, err := tokenLogin(ctx, c)
	if err != nil {
		return err
	}
	old, err := findMarked(ctx, c, t, self, stickyMarker)
	if err != nil {
		return err
	}
	var history []entry
	if old != nil {
		history = readHistory(old.GetBody())
	}
	// The entry for the same commit is replaced; others are kept, newest first.
	var earlier []entry
	for _, e := range history {
		if e.SHA != cur.SHA && len(earlier) < maxHistory {
			earlier = append(earlier, e)
		}
	}
	text := renderRollup(rollup{sha: t.SHA, run: cur.Run, body: body, earlier: earlier, withHistory: true, current: &cur})
	var id int64
	if old != nil {
		id = old.GetID()
	}
	_, err = writeComment(ctx, c, t, id, text)
	return err
}

// tokenLogin is the login a plain token writes as. A workflow's
// GITHUB_TOKEN may not ask (GitHub answers 403): it writes as
// github-actions[bot].
func tokenLogin(ctx context.Context, c *github.Client) (string, error) {
	u, _, err := c.Users.Get(ctx, "")
	var e *github.ErrorResponse
	if errors.As(err, &e) && e.Response != nil && e.Response.StatusCode == http.StatusForbidden {
		return "github-actions[bot]", nil
	}
	if err != nil {
		return "", fmt.Errorf("who is this token: %w", err)
	}
	return u.GetLogin(), nil
}

// writeComment edits comment id, or creates a comment when id is 0, and
// returns its id. A comment deleted meanwhile is created again.
func writeComment(ctx context.Context, c *github.Client, t Target, id int64, body string) (int64, error) {
	if id != 0 {
		_, _, err := c.Issues.EditComment(ctx, t.Owner, t.Repo, id, &github.IssueComment{Body: &body})
		if err == nil {
			return id, nil
		}
		if !isNotFound(err) {
			return 0, fmt.Errorf("edit comment %d on %s/%s#%d: %w", id, t.Owner, t.Repo, t.PR, err)
		}
	}
	cm, _, err := c.Issues.CreateComment(ctx, t.Owner, t.Repo, t.PR, &github.IssueComment{Body: &body})
	if err != nil {
		return 0, fmt.Errorf("comment on %s/%s#%d: %w", t.Owner, t.Repo, t.PR, err)
	}
	return cm.GetID(), nil
}

// findMarked returns the newest comment by login that starts with marker,
// or nil. Only the bot's own comments count, so a person quoting the marker
// cannot capture them.
func findMarked(ctx context.Context, c *github.Client, t Target, login, marker string) (*github.IssueComment, error) {
	var found *github.IssueComment
	opts := &github.IssueListCommentsOptions{ListOptions: github.ListOptions{PerPage: 100}}
	for {
		comments, resp, err := c.Issues.ListComments(ctx, t.Owner, t.Repo, t.PR, opts)
		if err != nil {
			return nil, fmt.Errorf("list comments on %s/%s#%d: %w", t.Owner, t.Repo, t.PR, err)
		}
		for _, cm := range comments {
			if strings.EqualFold(cm.GetUser().GetLogin(), login) && strings.HasPrefix(cm.GetBody(), marker) {
				found = cm
			}
		}
		if resp.NextPage == 0 {
			return found, nil
		}
		opts.Page = resp.NextPage
	}
}

// readHistory decodes the history marker of a sticky comment body (JSON,
// or base64 JSON as written before); a body without a readable one has no
// history.
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
	data := []byte(rest[:j])
	if dec, err := base64.StdEncoding.DecodeString(rest[:j]); err == nil {
		data = dec
	}
	var es []entry
	if json.Unmarshal(data, &es) != nil {
		return nil
	}
	return es
}

// rollup is what the sticky comment shows: the head commit's verdict (or
// why there is none yet) and the earlier commits' verdicts, newest first.
type rollup struct {
	sha, run string
	body     func(limit int) string
	earlier  []entry
	// withHistory writes the hidden history marker, current and earlier.
	withHistory bool
	current     *entry
}

// renderRollup lays out the comment: marker, heading, the head's body,
// earlier verdicts folded, and the history marker. It never exceeds
// MaxCommentChars: earlier verdicts beyond minEarlier go first, oldest
// first, then the body is asked to fit in what remains.
func renderRollup(r rollup) string {
	heading := fmt.Sprintf("%s\n### pairbench: %s\n\n", stickyMarker, short(r.sha))
	if r.run != "" {
		heading = fmt.Sprintf("%s\n### pairbench: %s (run `%s`)\n\n", stickyMarker, short(r.sha), r.run)
	}
	const bodyRoom = report.MarkdownLimit
	es := r.earlier[:min(len(r.earlier), maxHistory)]
	for {
		tail := renderEarlier(es)
		if r.withHistory {
			tail += renderHistory(append([]entry{*r.current}, es...))
		}
		room := MaxCommentChars - len(heading) - len(tail)
		if room >= bodyRoom || len(es) <= minEarlier {
			b := r.body(max(min(room, bodyRoom), 0))
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
		fmt.Fprintf(&b, "| %s | %s | %s |\n", short(e.SHA), verdict, report)
	}
	b.WriteString("\n</details>\n")
	return b.String()
}

func renderHistory(es []entry) string {
	data, _ := json.Marshal(es) // entries are plain strings and bools
	return "\n" + historyPrefix + string(data) + historySuffix + "\n"
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
	return setLabel(ctx, c, t, label, nil)
}

// setLabel is SetLabel remembering in made (when not nil) the labels known
// to exist in a repository, so a label is created once, not at every
// verdict.
func setLabel(ctx context.Context, c *github.Client, t Target, label pairbench.Label, made *sync.Map) error {
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
	key := t.Owner + "/" + t.Repo + "\x00" + name
	known := false
	if made != nil {
		_, known = made.Load(key)
	}
	if !known {
		_, _, err := c.Issues.CreateLabel(ctx, t.Owner, t.Repo, &github.Label{Name: &name, Color: &color, Description: &desc})
		if err != nil && !isAlreadyExists(err) {
			return fmt.Errorf("create label %q: %w", name, err)
		}
		if made != nil {
			made.Store(key, true)
		}
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
