package bot

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/go-github/v66/github"
	"github.com/riverqueue/river"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/artifacts"
	"github.com/pairbench/pairbench/intents/config"
	"github.com/pairbench/pairbench/report"
	"github.com/pairbench/pairbench/rundir"
	"github.com/pairbench/pairbench/state"
)

// CheckName is the name of the bot's check runs, and the context of its
// commit statuses.
const CheckName = "pairbench"

// Check run conclusions.
const (
	conclusionSuccess   = "success"
	conclusionNeutral   = "neutral"
	conclusionFailure   = "failure"
	conclusionCancelled = "cancelled"
)

// Conclusion maps a verdict to a check run conclusion:
//
//   - better, more accurate, faster: success — the tools help;
//   - less accurate, slower: failure — the tools make the agent worse, which
//     a branch protection rule may choose to block on;
//   - mixed, no adoption, no signal, inconclusive, or no verdict: neutral —
//     the bench cannot say the tools help or hurt.
//
// A bench that could not finish is a failure too, with a title saying so;
// a cancelled or superseded one is cancelled.
func Conclusion(l pairbench.Label) string {
	switch l {
	case pairbench.Better, pairbench.MoreAccurate, pairbench.Faster:
		return conclusionSuccess
	case pairbench.LessAccurate, pairbench.Slower:
		return conclusionFailure
	}
	return conclusionNeutral
}

// checkView is what a bench's check run should show.
type checkView struct {
	status     string // queued, in_progress, completed
	conclusion string // when completed
	title      string
	summary    string
	// text is the check run's details below the summary ("" for none).
	text string
}

// leaseTTL bounds how long a job may hold the lease on what it writes; it
// renews it each round.
const leaseTTL = 2 * time.Minute

// workCheck brings a bench's check run (or commit status) up to date: it
// renders what the record says, writes it, and repeats until what it wrote
// is the newest, holding the bench's lease so writes never cross.
func (b *Bot) workCheck(ctx context.Context, job *river.Job[checkJob]) error {
	lease, owner := "check:"+job.Args.Run, fmt.Sprint("job:", job.ID)
	defer b.release(ctx, lease, owner)
	for {
		var bn state.Bench
		var found, held bool
		if err := b.state.Update(ctx, func(tx *state.Tx) (err error) {
			if held, err = tx.TakeLease(ctx, lease, owner, leaseTTL); err != nil || !held {
				return err
			}
			bn, found, err = tx.Bench(ctx, job.Args.Run)
			return err
		}); err != nil {
			return err
		}
		if !held {
			return river.JobSnooze(time.Second)
		}
		if !found || bn.CheckPosted >= bn.CheckVersion {
			return nil
		}
		view, err := b.checkView(ctx, bn)
		if err != nil {
			return err
		}
		id, err := b.postCheck(ctx, bn, view)
		if err != nil {
			return err
		}
		if err := b.state.Update(ctx, func(tx *state.Tx) error {
			cur, _, err := tx.LockBench(ctx, bn.Run)
			if err != nil {
				return err
			}
			cur.CheckID = max(cur.CheckID, id)
			cur.CheckPosted = max(cur.CheckPosted, bn.CheckVersion)
			return tx.SaveBench(ctx, cur)
		}); err != nil {
			return err
		}
	}
}

// release gives up a lease, even if ctx has ended.
func (b *Bot) release(ctx context.Context, lease, owner string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := b.state.Update(ctx, func(tx *state.Tx) error { return tx.ReleaseLease(ctx, lease, owner) }); err != nil {
		b.log.Warn("could not release a lease; it expires by itself", "lease", lease, "err", err)
	}
}

// checkView renders a bench's check.
func (b *Bot) checkView(ctx context.Context, bn state.Bench) (checkView, error) {
	summary := fmt.Sprintf("Bench of %s: %s.", short(bn.SHA), describe(bn))
	if bn.RequestedBy != "" {
		summary += fmt.Sprintf(" Requested by @%s.", bn.RequestedBy)
	}
	switch bn.State {
	case state.BenchQueued:
		return checkView{status: "queued", title: "queued", summary: summary}, nil
	case state.BenchRunning:
		title := progressTitle(bn)
		if title == "" {
			title = "running"
		}
		if note := stopNote(bn); note != "" {
			return checkView{status: "in_progress", title: title, summary: summary + " The bench stopped early: " + title + ". " + note + " Its report follows."}, nil
		}
		return checkView{status: "in_progress", title: title, summary: summary + " The bench is running: " + title + "."}, nil
	case state.BenchFailed:
		return checkView{status: "completed", conclusion: conclusionFailure, title: "bench failed", summary: bn.Reason}, nil
	case state.BenchCancelled:
		title := "cancelled"
		if strings.HasPrefix(bn.Reason, "Superseded") {
			title = "superseded"
		}
		return checkView{status: "completed", conclusion: conclusionCancelled, title: title, summary: bn.Reason}, nil
	}
	rep, err := b.readReport(ctx, RunID(bn.Run))
	if err != nil {
		return checkView{}, err
	}
	title := "bench: " + string(rep.Verdict) + " · " + comparedTitle(rep, bn.SHA)
	if rep.Verdict == "" {
		title = "no verdict: no intents were benched"
	}
	// The summary is short, the verdict and the worst intents; the text
	// holds every intent and figure, and details_url links the report.
	opts := report.MarkdownOptions{FullReportURL: b.reportLink(bn.Run)}
	conclusion, gate := gatedConclusion(rep, bn.FailOn)
	v := checkView{status: "completed", conclusion: conclusion, title: title,
		summary: gate + report.CheckSummary(rep, opts), text: report.Markdown(rep, opts)}
	second, err := b.againstNone(ctx, bn)
	if err != nil || second == nil {
		return v, err
	}
	// compare: both: the second comparison, named by its arms.
	head := fmt.Sprintf("**Also %s: %s**", comparedTitle(second, bn.SHA), second.Verdict)
	v.summary += "\n" + head + " (run `" + second.RunID + "`).\n"
	v.text += "\n\n" + head + "\n\n" + report.Markdown(second, report.MarkdownOptions{FullReportURL: b.reportLink(second.RunID), Limit: report.MarkdownLimit / 3})
	if c, g := gatedConclusion(second, bn.FailOn); g != "" && v.conclusion != conclusionFailure {
		v.conclusion, v.summary = c, g+v.summary
	}
	return v, nil
}

// progressTitle says how far a running bench is, from what its runner
// reported (recordProgress): the pairs done of those in force, and in a run
// of looks the look under way, as the CLI's progress says it ("3 of 8
// pairs done (look 1 of 3, 24 planned)"), or the look that stopped the run
// and why ("8 of 8 pairs done (stopped at look 1 of 3 for futility)"); ""
// before any count.
func progressTitle(bn state.Bench) string {
	if bn.TotalPairs <= 0 {
		return ""
	}
	s := fmt.Sprintf("%d of %d pairs done", bn.DonePairs, bn.TotalPairs)
	if bn.StopLook > 0 && bn.Looks > 0 {
		return s + fmt.Sprintf(" (stopped at look %d of %d for %s)", bn.StopLook, bn.Looks, bn.StopKind)
	}
	if look := rundir.LookUnderWay(bn.Look, bn.Looks, bn.PlannedPairs); look != "" {
		s += " (" + look + ")"
	}
	return s
}

// stopNote says at which look a running bench stopped, and why, in the
// report's words (report.StopNote); "" while it goes on.
func stopNote(bn state.Bench) string {
	if bn.StopLook == 0 || bn.Looks == 0 {
		return ""
	}
	return report.StopNote(bn.StopLook, bn.Looks, report.StopKind(bn.StopKind), bn.StopReason)
}

// againstNone reads the report of a bench's second comparison, which
// compare: both asks for (config.AgainstNoneRunID); nil when the bench
// has none.
func (b *Bot) againstNone(ctx context.Context, bn state.Bench) (*report.Report, error) {
	if bn.Base == "" {
		return nil, nil // benched against no tools already
	}
	rep, err := b.readReport(ctx, RunID(config.AgainstNoneRunID(bn.Run)))
	if errors.Is(err, artifacts.ErrNotExist) {
		return nil, nil
	}
	return rep, err
}

// gatedConclusion is a finished bench's conclusion. Without failOn (the
// registry's fail_on) it is Conclusion(verdict). With it, the registry
// decides what blocks: failure when the report fails the gate
// (report.Report.Gate; the summary's first line then says what failed it),
// else success for a verdict that helps and neutral for any other, so a
// label the registry did not name never fails the check.
func gatedConclusion(rep *report.Report, failOn string) (conclusion, summary string) {
	if failOn == "" {
		return Conclusion(rep.Verdict), ""
	}
	labels, err := report.ParseGate(failOn)
	if err != nil {
		// The registry's check refused it; recorded before that check, it
		// gates nothing.
		return Conclusion(rep.Verdict), ""
	}
	if failed := rep.Gate(labels); len(failed) > 0 {
		return conclusionFailure, fmt.Sprintf("**Failed `fail_on: %s`**: %s.\n\n", failOn, strings.Join(failed, "; "))
	}
	if c := Conclusion(rep.Verdict); c == conclusionSuccess {
		return c, ""
	}
	return conclusionNeutral, ""
}

// postCheck writes the view on GitHub and returns the check run's id (0
// for a commit status). Until its id is recorded, a bench's check run is
// looked for by its external id (the run id) before one is created: a write
// may have been done whose answer was lost, or a crash may have come
// between creating it and recording its id, in this job or in an earlier
// one for the same bench, so nothing makes a second one.
func (b *Bot) postCheck(ctx context.Context, bn state.Bench, v checkView) (int64, error) {
	c, err := b.cfg.Clients.Client(ctx, bn.Installation)
	if err != nil {
		return 0, err
	}
	owner, repo, _ := strings.Cut(bn.Repo, "/")
	if b.cfg.CommitStatuses {
		return 0, b.postStatus(ctx, c, owner, repo, bn, v)
	}
	id := bn.CheckID
	if id == 0 {
		if id, err = findCheck(ctx, c, owner, repo, bn.SHA, checkExternalID(bn)); err != nil {
			return 0, err
		}
	}
	summary := clipBytes(v.summary, 65535)
	out := &github.CheckRunOutput{Title: &v.title, Summary: &summary}
	if v.text != "" {
		text := clipBytes(v.text, 65535)
		out.Text = &text
	}
	var done *github.Timestamp
	var conclusion, status *string
	if v.status == "completed" {
		done, conclusion = &github.Timestamp{Time: bn.Ended}, &v.conclusion
	} else {
		status = &v.status
	}
	if id == 0 {
		ext := checkExternalID(bn)
		cr, _, err := c.Checks.CreateCheckRun(ctx, owner, repo, github.CreateCheckRunOptions{
			Name: CheckName, HeadSHA: bn.SHA, ExternalID: &ext, Status: status, Conclusion: conclusion,
			StartedAt: &github.Timestamp{Time: bn.Created}, CompletedAt: done, Output: out, DetailsURL: b.detailsURL(bn),
		})
		if err != nil {
			return 0, fmt.Errorf("create check run for %s: %w", bn.Run, err)
		}
		return cr.GetID(), nil
	}
	_, _, err = c.Checks.UpdateCheckRun(ctx, owner, repo, id, github.UpdateCheckRunOptions{
		Name: CheckName, Status: status, Conclusion: conclusion, CompletedAt: done, Output: out, DetailsURL: b.detailsURL(bn),
	})
	if err != nil {
		return 0, fmt.Errorf("update check run %d of %s: %w", id, bn.Run, err)
	}
	return id, nil
}

func (b *Bot) detailsURL(bn state.Bench) *string {
	u := b.reportLink(bn.Run)
	if bn.State != state.BenchDone || u == "" {
		u = bn.WorkflowRunURL
	}
	if u == "" {
		return nil
	}
	return &u
}

// checkExternalID is the external id of a bench's check run: its run id,
// and after the n-th top-up (/bench more) "<run id>+n", the check run of
// that phase of the run (a completed check run never reopens).
func checkExternalID(bn state.Bench) string {
	if bn.TopUps == 0 {
		return bn.Run
	}
	return fmt.Sprintf("%s+%d", bn.Run, bn.TopUps)
}

// runOfCheck is the run id a check run's external id names.
func runOfCheck(externalID string) RunID {
	run, _, _ := strings.Cut(externalID, "+")
	return RunID(run)
}

// findCheck returns the id of the check run on sha whose external id is
// ext, 0 if there is none.
func findCheck(ctx context.Context, c *github.Client, owner, repo, sha, ext string) (int64, error) {
	name := CheckName
	opts := &github.ListCheckRunsOptions{CheckName: &name, ListOptions: github.ListOptions{PerPage: 100}}
	for {
		res, resp, err := c.Checks.ListCheckRunsForRef(ctx, owner, repo, sha, opts)
		if err != nil {
			return 0, fmt.Errorf("list check runs of %s: %w", short(sha), err)
		}
		for _, r := range res.CheckRuns {
			if r.GetExternalID() == ext {
				return r.GetID(), nil
			}
		}
		if resp.NextPage == 0 {
			return 0, nil
		}
		opts.Page = resp.NextPage
	}
}

// postStatus writes the view as a commit status, for a plain token. GitHub
// statuses have no neutral or cancelled: neutral is success (the check does
// not block), cancelled is error.
func (b *Bot) postStatus(ctx context.Context, c *github.Client, owner, repo string, bn state.Bench, v checkView) error {
	st := map[string]string{
		"queued": "pending", "in_progress": "pending",
		conclusionSuccess: "success", conclusionNeutral: "success", conclusionFailure: "failure", conclusionCancelled: "error",
	}
	key := v.status
	if key == "completed" {
		key = v.conclusion
	}
	state, desc, ctxName := st[key], clipRunes(v.title, 140), CheckName
	s := &github.RepoStatus{State: &state, Description: &desc, Context: &ctxName, TargetURL: b.detailsURL(bn)}
	if _, _, err := c.Repositories.CreateStatus(ctx, owner, repo, bn.SHA, s); err != nil {
		return fmt.Errorf("create status for %s: %w", bn.Run, err)
	}
	return nil
}

func clipRunes(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// comparedTitle names what a bench compared by what the arms are, for its
// check run's title, as the report and the comment do: "this PR's tools
// (5d6e7f8) against main@1a2b3c4's tools", naming the domains on each side
// when some were benched against no tools (new, or their intents alone
// changed). A report without arms (a bench against no tools) compares the
// tools at sha with none.
func comparedTitle(rep *report.Report, sha string) string {
	a := rep.Arms
	if a == nil {
		return fmt.Sprintf("this PR's tools (%s) against no tools", short(sha))
	}
	var control, none []string
	for _, in := range rep.Intents {
		side := &control
		if a.ControlFor(in.Domain) == report.NoToolsArm {
			side = &none
		}
		if !slices.Contains(*side, in.Domain) {
			*side = append(*side, in.Domain)
		}
	}
	against := a.Treatment.Name + " against "
	switch {
	case len(none) == 0:
		return against + a.Control.Name
	case len(control) == 0:
		return against + report.NoToolsArm.Name
	}
	return fmt.Sprintf("%s%s (%s), %s (%s)", against, a.Control.Name, titleList(control), report.NoToolsArm.Name, titleList(none))
}

// titleList lists names for a title: the first three, then how many more.
func titleList(names []string) string {
	if len(names) <= 3 {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:3], ", "), len(names)-3)
}
