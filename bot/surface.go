package bot

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/riverqueue/river"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/report"
	"github.com/pairbench/pairbench/state"
)

// workSurface brings what a pull request shows up to date with its
// records: the approval request, the sticky rollup comment and the label.
// Like workCheck it holds the pull request's lease and repeats until what
// it wrote is the newest.
//
// The rollup's headline is always the head commit's: a verdict for an
// older commit (a late run, a re-run of an old check) goes into the earlier
// commits, and the label changes only for the head's verdict.
func (b *Bot) workSurface(ctx context.Context, job *river.Job[surfaceJob]) error {
	lease, owner := fmt.Sprintf("surface:%s#%d", job.Args.Repo, job.Args.PR), fmt.Sprint("job:", job.ID)
	defer b.release(ctx, lease, owner)
	for {
		var pull state.Pull
		var benches []state.Bench
		var held bool
		if err := b.state.Update(ctx, func(tx *state.Tx) (err error) {
			if held, err = tx.TakeLease(ctx, lease, owner, leaseTTL); err != nil || !held {
				return err
			}
			var found bool
			if pull, found, err = tx.Pull(ctx, job.Args.Repo, job.Args.PR); err != nil || !found || pull.SurfacePosted >= pull.SurfaceVersion {
				return err
			}
			// What the records say GitHub shows is forgotten until this round
			// has written it: a round cut short (a crash between removing the
			// old label and adding the new one, say) leaves GitHub unlike
			// any record, and the next round then writes everything again.
			if pull, err = forgetShown(ctx, tx, pull.Repo, pull.PR); err != nil {
				return err
			}
			benches, err = tx.BenchesOfPull(ctx, pull.Repo, pull.PR)
			return err
		}); err != nil {
			return err
		}
		if !held {
			return river.JobSnooze(time.Second)
		}
		if pull.Repo == "" || pull.SurfacePosted >= pull.SurfaceVersion {
			return nil
		}
		shown, err := b.showSurface(ctx, pull, benches)
		if err != nil {
			return err
		}
		if err := b.state.Update(ctx, func(tx *state.Tx) error {
			cur, err := tx.LockPull(ctx, pull.Repo, pull.PR)
			if err != nil {
				return err
			}
			cur.StickyID, cur.StickyHash = shown.StickyID, shown.StickyHash
			cur.ApprovalID, cur.ApprovalPosted = shown.ApprovalID, shown.ApprovalPosted
			cur.Label = shown.Label
			cur.SurfacePosted = max(cur.SurfacePosted, pull.SurfaceVersion)
			return tx.SavePull(ctx, cur)
		}); err != nil {
			return err
		}
	}
}

// forgetShown locks a pull request and clears the records of what its
// comments and label show, so that they are written again unless a round of
// workSurface records them. It returns the pull request as it was.
func forgetShown(ctx context.Context, tx *state.Tx, repo string, pr int) (state.Pull, error) {
	pull, err := tx.LockPull(ctx, repo, pr)
	if err != nil {
		return pull, err
	}
	cur := pull
	cur.StickyHash, cur.ApprovalPosted, cur.Label = "", "", ""
	return pull, tx.SavePull(ctx, cur)
}

// showSurface writes what pull should show and returns pull with what is
// shown now. A comment whose id is not recorded yet is looked for by its
// marker among the bot's own comments before one is posted: an earlier
// write may have been done whose answer was lost, or whose job died before
// recording it.
func (b *Bot) showSurface(ctx context.Context, pull state.Pull, benches []state.Bench) (state.Pull, error) {
	c, err := b.cfg.Clients.Client(ctx, pull.Installation)
	if err != nil {
		return pull, err
	}
	owner, name, _ := strings.Cut(pull.Repo, "/")
	t := Target{Owner: owner, Repo: name, PR: pull.PR, SHA: pull.HeadSHA}
	var self string
	if pull.StickyID == 0 || pull.ApprovalID == 0 {
		if self, err = b.cfg.Clients.Login(ctx); err != nil {
			return pull, err
		}
	}
	// The approval request: one comment, edited as the head moves.
	if pull.ApprovalBody != "" && pull.ApprovalBody != pull.ApprovalPosted {
		if pull.ApprovalID == 0 {
			if old, err := findMarked(ctx, c, t, self, approvalMarker); err != nil {
				return pull, err
			} else if old != nil {
				pull.ApprovalID = old.GetID()
			}
		}
		if pull.ApprovalID, err = writeComment(ctx, c, t, pull.ApprovalID, approvalMarker+"\n"+pull.ApprovalBody); err != nil {
			return pull, err
		}
		pull.ApprovalPosted = pull.ApprovalBody
	}

	head, earlier := b.rollupEntries(pull, benches)
	if head == nil && len(earlier) == 0 {
		return pull, nil // nothing has ended yet: no rollup
	}
	body, err := b.headBody(ctx, pull, head, benches)
	if err != nil {
		return pull, err
	}
	r := rollup{sha: pull.HeadSHA, body: body, earlier: earlier}
	if head != nil {
		r.run = head.Run
	}
	text := renderRollup(r)
	sum := sha256.Sum256([]byte(text))
	if hash := hex.EncodeToString(sum[:]); hash != pull.StickyHash {
		if pull.StickyID == 0 {
			if old, err := findMarked(ctx, c, t, self, stickyMarker); err != nil {
				return pull, err
			} else if old != nil {
				pull.StickyID = old.GetID()
			}
		}
		if pull.StickyID, err = writeComment(ctx, c, t, pull.StickyID, text); err != nil {
			return pull, err
		}
		pull.StickyHash = hash
	}

	// The label follows the head's verdict, and nothing else.
	if head != nil && head.State == state.BenchDone && head.Verdict != "" {
		want := LabelPrefix + head.Verdict
		if pull.Label != want {
			if err := setLabel(ctx, c, t, pairbench.Label(head.Verdict), &b.labels); err != nil {
				return pull, err
			}
			pull.Label = want
		}
	}
	return pull, nil
}

// rollupEntries returns the head commit's ended bench (nil if none) and
// the newest ended bench of each earlier commit, newest first.
func (b *Bot) rollupEntries(pull state.Pull, benches []state.Bench) (*state.Bench, []entry) {
	var head *state.Bench
	seen := map[string]bool{}
	var earlier []entry
	for i, bn := range benches { // newest first
		if bn.State != state.BenchDone && bn.State != state.BenchFailed || seen[bn.SHA] {
			continue
		}
		seen[bn.SHA] = true
		if bn.SHA == pull.HeadSHA {
			head = &benches[i]
			continue
		}
		earlier = append(earlier, entry{SHA: bn.SHA, Run: bn.Run, Verdict: bn.Verdict, Failed: bn.State == state.BenchFailed, Link: b.reportLink(bn.Run)})
	}
	return head, earlier
}

// headBody renders the rollup's main part: the head's report or failure,
// or what is happening to the head when it has no result yet.
func (b *Bot) headBody(ctx context.Context, pull state.Pull, head *state.Bench, benches []state.Bench) (func(int) string, error) {
	if head != nil && head.State == state.BenchFailed {
		return func(int) string { return failureText(head.SHA, head.Reason) }, nil
	}
	if head != nil {
		rep, err := b.readReport(ctx, RunID(head.Run))
		if err != nil {
			return nil, err
		}
		link := b.reportLink(head.Run)
		second, err := b.againstNone(ctx, *head)
		if err != nil {
			return nil, err
		}
		if second == nil {
			return func(limit int) string {
				return report.Markdown(rep, report.MarkdownOptions{FullReportURL: link, Limit: limit})
			}, nil
		}
		// compare: both: the second comparison below the first, each named
		// by its arms; a third of the room is the second's.
		return func(limit int) string {
			also := fmt.Sprintf("\n**Also %s** (run `%s`):\n\n", comparedTitle(second, head.SHA), second.RunID) +
				report.Markdown(second, report.MarkdownOptions{FullReportURL: b.reportLink(second.RunID), Limit: limit / 3})
			return report.Markdown(rep, report.MarkdownOptions{FullReportURL: link, Limit: limit - len(also)}) + also
		}, nil
	}
	msg := fmt.Sprintf("No verdict for %s yet.", short(pull.HeadSHA))
	for _, bn := range benches {
		if bn.Run == pull.Bench {
			msg = fmt.Sprintf("Run `%s` is benching %s; its verdict will be here.", bn.Run, short(bn.SHA))
		}
	}
	if pull.ApprovalSHA == pull.HeadSHA && pull.Bench == "" {
		msg = fmt.Sprintf("Commit %s waits for a maintainer's `/bench run`.", short(pull.HeadSHA))
	}
	return func(int) string { return msg + " The verdicts below are for earlier commits.\n" }, nil
}

// workReply posts a reply. A retry first looks for it, by its key, among
// the bot's comments, so a crash after posting does not post it twice.
func (b *Bot) workReply(ctx context.Context, job *river.Job[replyJob]) error {
	c, err := b.cfg.Clients.Client(ctx, job.Args.Installation)
	if err != nil {
		return err
	}
	owner, name, _ := strings.Cut(job.Args.Repo, "/")
	t := Target{Owner: owner, Repo: name, PR: job.Args.PR}
	marker := fmt.Sprintf("%sreply %s -->", markerPrefix, strings.ReplaceAll(job.Args.Key, "-->", ""))
	if job.Attempt > 1 {
		self, err := b.cfg.Clients.Login(ctx)
		if err != nil {
			return err
		}
		if old, err := findMarked(ctx, c, t, self, marker); err != nil || old != nil {
			return err
		}
	}
	_, err = writeComment(ctx, c, t, 0, marker+"\n"+job.Args.Body)
	return err
}

// workReact adds a reaction to a comment (GitHub keeps one per kind and
// user, so a retry adds nothing).
func (b *Bot) workReact(ctx context.Context, job *river.Job[reactJob]) error {
	c, err := b.cfg.Clients.Client(ctx, job.Args.Installation)
	if err != nil {
		return err
	}
	owner, name, _ := strings.Cut(job.Args.Repo, "/")
	_, _, err = c.Reactions.CreateIssueCommentReaction(ctx, owner, name, job.Args.CommentID, job.Args.Content)
	if isNotFound(err) {
		return nil // the comment was deleted
	}
	return err
}
