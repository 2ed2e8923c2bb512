package bot

import (
	"context"
	"fmt"
	"time"

	"github.com/google/go-github/v66/github"

	"github.com/pairbench/pairbench"
)

// CheckName is the name of the bot's check runs.
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

// checkRun writes one bench's check run.
type checkRun struct {
	c           *github.Client
	owner, repo string
	id          int64
	completed   bool // as found by findCheck
}

// createCheck creates the queued check run of a bench.
func createCheck(ctx context.Context, c *github.Client, t Target, run RunID, summary string, now time.Time) (checkRun, error) {
	status, title, ext := "queued", "queued", string(run)
	cr, _, err := c.Checks.CreateCheckRun(ctx, t.Owner, t.Repo, github.CreateCheckRunOptions{
		Name:       CheckName,
		HeadSHA:    t.SHA,
		ExternalID: &ext,
		Status:     &status,
		StartedAt:  &github.Timestamp{Time: now},
		Output:     &github.CheckRunOutput{Title: &title, Summary: &summary},
	})
	if err != nil {
		return checkRun{}, fmt.Errorf("create check run for %s: %w", short(t.SHA), err)
	}
	return checkRun{c: c, owner: t.Owner, repo: t.Repo, id: cr.GetID()}, nil
}

// findCheck finds the check run of run on sha, for a bench the bot has
// forgotten (a restart); ok is false if there is none.
func findCheck(ctx context.Context, c *github.Client, t Target, run RunID) (cr checkRun, ok bool, err error) {
	name := CheckName
	res, _, err := c.Checks.ListCheckRunsForRef(ctx, t.Owner, t.Repo, t.SHA, &github.ListCheckRunsOptions{
		CheckName: &name, ListOptions: github.ListOptions{PerPage: 100},
	})
	if err != nil {
		return checkRun{}, false, fmt.Errorf("list check runs of %s: %w", short(t.SHA), err)
	}
	for _, r := range res.CheckRuns {
		if r.GetExternalID() == string(run) {
			return checkRun{c: c, owner: t.Owner, repo: t.Repo, id: r.GetID(), completed: r.GetStatus() == "completed"}, true, nil
		}
	}
	return checkRun{}, false, nil
}

// progress marks the check run in progress with pairs done of total.
func (cr checkRun) progress(ctx context.Context, done, total int) error {
	status := "in_progress"
	title := fmt.Sprintf("%d of %d pairs done", done, total)
	summary := "The bench is running. " + title + "."
	return cr.update(ctx, github.UpdateCheckRunOptions{
		Name: CheckName, Status: &status,
		Output: &github.CheckRunOutput{Title: &title, Summary: &summary},
	})
}

// complete finishes the check run.
func (cr checkRun) complete(ctx context.Context, conclusion, title, summary string, now time.Time) error {
	const maxSummary = 65535
	summary = clipBytes(summary, maxSummary)
	return cr.update(ctx, github.UpdateCheckRunOptions{
		Name: CheckName, Conclusion: &conclusion,
		CompletedAt: &github.Timestamp{Time: now},
		Output:      &github.CheckRunOutput{Title: &title, Summary: &summary},
	})
}

func (cr checkRun) update(ctx context.Context, opts github.UpdateCheckRunOptions) error {
	if cr.c == nil {
		return nil // no check run to write
	}
	if _, _, err := cr.c.Checks.UpdateCheckRun(ctx, cr.owner, cr.repo, cr.id, opts); err != nil {
		return fmt.Errorf("update check run %d: %w", cr.id, err)
	}
	return nil
}
