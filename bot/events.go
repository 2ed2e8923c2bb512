package bot

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/google/go-github/v66/github"

	"github.com/pairbench/pairbench/state"
)

// Reply throttles: an outsider's /bench gets one answer per pull request a
// day, and a pull request gets at most maxRepliesPerHour replies an hour
// to people with write access and as many refusals to outsiders, each
// counted apart, so nobody can spend the installation's write budget by
// commenting, and outsiders never silence the maintainers.
const (
	refusalEvery      = 24 * time.Hour
	maxRepliesPerHour = 10
)

// pullRequest plans an automatic bench when a pull request's head changes
// or it becomes ready for review, and cancels the bench when it closes.
func (h *handling) pullRequest(ctx context.Context) (apply, error) {
	var ev github.PullRequestEvent
	if err := decode("pull_request", h.delivery.Payload, &ev); err != nil {
		return nil, err
	}
	h.setInstallation(ev.GetInstallation())
	pr := ev.GetPullRequest()
	repo := repoOf(ev.GetRepo(), h.inst)
	log := h.log.With("pr", pr.GetNumber(), "sha", short(pr.GetHead().GetSHA()))
	switch ev.GetAction() {
	case "closed":
		why := "The pull request was closed."
		if pr.GetMerged() {
			why = "The pull request was merged."
		}
		return func(ctx context.Context, tx *state.Tx) error {
			pull, err := h.lockPull(ctx, tx, repo, pr.GetNumber())
			if err != nil {
				return err
			}
			pull.Closed = true
			if err := h.bot.supersede(ctx, tx, &pull, why); err != nil {
				return err
			}
			return tx.SavePull(ctx, pull)
		}, nil
	case "opened", "synchronize", "reopened", "ready_for_review":
	default:
		return nil, nil
	}
	sha := pr.GetHead().GetSHA()
	since := pr.GetUpdatedAt().Time
	if since.IsZero() {
		since = h.delivery.ReceivedAt
	}
	recordHead := func(ctx context.Context, tx *state.Tx) (state.Pull, error) {
		pull, err := h.lockPull(ctx, tx, repo, pr.GetNumber())
		if err != nil {
			return pull, err
		}
		pull.Closed = pr.GetState() == "closed"
		if pull.HeadSHA != sha && !since.Before(pull.HeadSince) {
			pull.HeadSHA, pull.HeadSince = sha, since
		}
		return pull, nil
	}
	if pr.GetState() == "closed" {
		return nil, nil
	}
	if pr.GetDraft() {
		log.Info("draft pull request: the bench waits until it is ready for review")
		return func(ctx context.Context, tx *state.Tx) error {
			pull, err := recordHead(ctx, tx)
			if err != nil {
				return err
			}
			return tx.SavePull(ctx, pull)
		}, nil
	}
	c, err := h.client(ctx)
	if err != nil {
		return nil, err
	}
	// Deliveries may arrive out of order: the head GitHub has now decides,
	// unless the read is older than this delivery (see readPull).
	live, lagging, err := h.readPull(ctx, c, repo, pr.GetNumber(), sha, since)
	if err != nil {
		return nil, err
	}
	if !lagging && (live.GetHead().GetSHA() != sha || live.GetState() == "closed") {
		log.Info("stale event: the pull request has moved on", "head", short(live.GetHead().GetSHA()), "state", live.GetState())
		return nil, nil
	}
	t := Target{Owner: repo.Owner, Repo: repo.Name, PR: pr.GetNumber(), SHA: sha}
	files, err := listFiles(ctx, c, t)
	if err != nil {
		return nil, err
	}
	reg := registryAt{c: c, owner: t.Owner, repo: t.Repo, sha: sha}
	p, err := reg.planFiles(ctx, files, pr.GetBase().GetSHA())
	if errors.Is(err, ErrNoConfig) {
		log.Info("no .pairbench.yml at the head commit: not a registry, nothing to do")
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if len(p.Domains) > 0 {
		if p.FailOn, err = reg.failOnAt(ctx, pr.GetBase().GetSHA()); err != nil {
			return nil, err
		}
	}
	why, trustedPR := trusted(pr)
	return func(ctx context.Context, tx *state.Tx) error {
		pull, err := recordHead(ctx, tx)
		if err != nil {
			return err
		}
		if pull.HeadSHA != sha {
			log.Info("a newer head was recorded meanwhile", "head", short(pull.HeadSHA))
			return tx.SavePull(ctx, pull)
		}
		if err := h.bot.benchHead(ctx, tx, &pull, p, trustedPR, why, log); err != nil {
			return err
		}
		return tx.SavePull(ctx, pull)
	}, nil
}

// benchHead decides about the pull request's head commit: nothing if it is
// being benched, its verdict again if it was benched (a reopen, a push
// back), a bench if the pull request is trusted, or else one request for a
// maintainer's approval, edited as the head moves.
func (b *Bot) benchHead(ctx context.Context, tx *state.Tx, pull *state.Pull, p plan, trustedPR bool, why string, log interface {
	Info(string, ...any)
}) error {
	sha := pull.HeadSHA
	benches, err := tx.BenchesOfCommit(ctx, pull.Repo, sha)
	if err != nil {
		return err
	}
	for _, bn := range benches {
		if bn.PR != pull.PR {
			continue
		}
		switch {
		case bn.Run == pull.Bench:
			log.Info("already benching this commit", "run", bn.Run)
			return nil
		case bn.State == state.BenchDone:
			log.Info("this commit was benched: its verdict stands", "run", bn.Run)
			if err := b.supersede(ctx, tx, pull, fmt.Sprintf("%s is the head again; its verdict from run `%s` stands.", short(sha), bn.Run)); err != nil {
				return err
			}
			pull.SurfaceVersion++
			return enqueueSurface(ctx, tx, *pull)
		}
	}
	if len(p.Domains) == 0 {
		log.Info("no domain with intents changed: nothing to bench")
		return b.supersede(ctx, tx, pull, fmt.Sprintf("Superseded by %s, which changes no domain with intents.", short(sha)))
	}
	if !trustedPR {
		log.Info("untrusted pull request: asking a maintainer to approve", "reason", why)
		// The approval covered the older commit only.
		if err := b.supersede(ctx, tx, pull, fmt.Sprintf("Superseded by a push of %s, which needs its own approval.", short(sha))); err != nil {
			return err
		}
		pull.ApprovalSHA = sha
		pull.ApprovalBody = approvalBody(p.Domains, why, sha)
		pull.SurfaceVersion++
		return enqueueSurface(ctx, tx, *pull)
	}
	_, err = b.startBench(ctx, tx, pull, sha, p, Command{Verb: VerbRun}, "")
	return err
}

func approvalBody(domains []string, why, sha string) string {
	return fmt.Sprintf("This pull request changes %s, but it %s, so pairbench does not bench it on its own.\n\n"+
		"A maintainer can review commit `%s` and comment `/bench run` to bench exactly that commit. "+
		"The approval covers that commit only: after a new push this comment names the new head, to be approved again.",
		domainList(domains), why, sha)
}

func approvedBody(sha, by, run string) string {
	who := "a maintainer"
	if by != "" {
		who = "@" + by
	}
	return fmt.Sprintf("Commit `%s` was approved by %s and is benched as run `%s`. "+
		"A new push needs a new approval; this comment will say so.", sha, who, run)
}

// trusted reports whether a pull request may be benched without a
// maintainer's approval: it must come from a branch of the repository itself
// and its author must be an owner, member or collaborator. Otherwise it
// returns why not.
func trusted(pr *github.PullRequest) (why string, ok bool) {
	if pr.GetHead().GetRepo().GetFullName() != pr.GetBase().GetRepo().GetFullName() || pr.GetHead().GetRepo().GetFork() {
		return "comes from a fork", false
	}
	switch pr.GetAuthorAssociation() {
	case "OWNER", "MEMBER", "COLLABORATOR":
		return "", true
	case "FIRST_TIMER", "FIRST_TIME_CONTRIBUTOR":
		return "is by a first-time contributor", false
	}
	return "is by an author without write access", false
}

// issueComment carries out /bench commands on pull requests.
func (h *handling) issueComment(ctx context.Context) (apply, error) {
	var ev github.IssueCommentEvent
	if err := decode("issue_comment", h.delivery.Payload, &ev); err != nil {
		return nil, err
	}
	h.setInstallation(ev.GetInstallation())
	cm := ev.GetComment()
	// IsPullRequest, unlike the Get methods, does not accept a nil issue.
	if ev.GetAction() != "created" || ev.Issue == nil || !ev.Issue.IsPullRequest() || cm.GetUser().GetType() == "Bot" ||
		strings.Contains(cm.GetBody(), markerPrefix) {
		return nil, nil
	}
	parsed := ParseComment(cm.GetBody())
	if parsed.Ignored() {
		return nil, nil
	}
	user := cm.GetUser().GetLogin()
	if self, err := h.bot.cfg.Clients.Login(ctx); err != nil {
		return nil, err
	} else if strings.EqualFold(user, self) {
		return nil, nil // its own comment, in token mode a User's
	}
	repo := repoOf(ev.GetRepo(), h.inst)
	t := Target{Owner: repo.Owner, Repo: repo.Name, PR: ev.GetIssue().GetNumber()}
	log := h.log.With("pr", t.PR, "user", user)
	c, err := h.client(ctx)
	if err != nil {
		return nil, err
	}
	ok, err := canWrite(ctx, c, t, user)
	if err != nil {
		return nil, err
	}
	if !ok {
		log.Info("command refused: no write access")
		return h.throttledReply(repo, t.PR, user, "refused", fmt.Sprintf("Sorry @%s, only people with write access to this repository can run `/bench` commands. "+
			"A maintainer can run `/bench run` for you.", user)), nil
	}
	// A comment's command is carried out once, and acknowledged with a
	// reaction, however often its delivery comes (see RecordCommand).
	written := cm.GetCreatedAt().Time
	react := func(ctx context.Context, tx *state.Tx) error {
		if first, err := tx.RecordCommand(ctx, repo.FullName(), cm.GetID()); err != nil || !first {
			if err == nil {
				log.Info("command ignored: the comment's command was carried out already", "comment", cm.GetID())
				err = errDone
			}
			return err
		}
		_, err := tx.Enqueue(ctx, reactJob{Repo: repo.FullName(), Installation: h.inst, CommentID: cm.GetID(), Content: "eyes"}, nil)
		return err
	}
	if parsed.Reply != "" {
		return h.both(react, h.throttledReply(repo, t.PR, user, "command", parsed.Reply)), nil
	}
	switch cmd := parsed.Command; cmd.Verb {
	case VerbRun:
		next, err := h.runCommand(ctx, c, repo, t, *cmd, user, written)
		if err != nil {
			return nil, err
		}
		return h.both(react, next), nil
	case VerbCancel:
		return h.both(react, func(ctx context.Context, tx *state.Tx) error {
			pull, err := h.lockPull(ctx, tx, repo, t.PR)
			if err != nil {
				return err
			}
			run := pull.Bench
			msg := "No bench is running on this pull request."
			if run != "" {
				bn, _, err := tx.Bench(ctx, run)
				if err != nil {
					return err
				}
				if writtenBefore(written, bn) {
					// A late delivery: the cancel was of an earlier bench.
					msg = fmt.Sprintf("Run `%s` (commit %s) started after your `/bench cancel` was written, so it goes on. "+
						"Comment `/bench cancel` again to stop it.", run, short(bn.SHA))
					return h.throttledReply(repo, t.PR, user, "command", msg)(ctx, tx)
				}
				if err := h.bot.supersede(ctx, tx, &pull, fmt.Sprintf("@%s cancelled this bench.", user)); err != nil {
					return err
				}
				msg = fmt.Sprintf("Cancelled run `%s` (commit %s).", run, short(bn.SHA))
			}
			if err := tx.SavePull(ctx, pull); err != nil {
				return err
			}
			return h.throttledReply(repo, t.PR, user, "command", msg)(ctx, tx)
		}), nil
	case VerbMore:
		return h.both(react, func(ctx context.Context, tx *state.Tx) error {
			pull, err := h.lockPull(ctx, tx, repo, t.PR)
			if err != nil {
				return err
			}
			msg, err := h.bot.topUp(ctx, tx, &pull, cmd.Pairs, user)
			if err != nil {
				return err
			}
			if err := tx.SavePull(ctx, pull); err != nil {
				return err
			}
			return h.throttledReply(repo, t.PR, user, "command", msg)(ctx, tx)
		}), nil
	case VerbStatus:
		return h.both(react, func(ctx context.Context, tx *state.Tx) error {
			pull, err := h.lockPull(ctx, tx, repo, t.PR)
			if err != nil {
				return err
			}
			benches, err := tx.BenchesOfPull(ctx, repo.FullName(), t.PR)
			if err != nil {
				return err
			}
			return h.throttledReply(repo, t.PR, user, "command", statusText(pull, benches, tx.Now()))(ctx, tx)
		}), nil
	}
	return nil, nil
}

// errDone stops a chain of applies (both) early, without an error.
var errDone = errors.New("done")

// both applies a, then b, unless a returns errDone.
func (h *handling) both(a, b apply) apply {
	return func(ctx context.Context, tx *state.Tx) error {
		if err := a(ctx, tx); err != nil {
			if errors.Is(err, errDone) {
				return nil
			}
			return err
		}
		return b(ctx, tx)
	}
}

// writtenBefore reports whether a comment written at written predates
// bench bn (to the second, GitHub's precision): a command delivered late.
// An unknown time (a re-run button's) predates nothing.
func writtenBefore(written time.Time, bn state.Bench) bool {
	return !written.IsZero() && written.Before(bn.Created.Truncate(time.Second))
}

// throttledReply queues a reply unless the throttles say enough: one
// refusal per user and pull request a day, maxRepliesPerHour replies of
// its kind (refusals, or answers to commands) per pull request an hour.
func (h *handling) throttledReply(repo Repo, pr int, user, kind, body string) apply {
	return func(ctx context.Context, tx *state.Tx) error {
		if kind == "refused" {
			n, err := tx.Replies(ctx, repo.FullName(), pr, user, kind, tx.Now().Add(-refusalEvery))
			if err != nil {
				return err
			}
			if n > 0 {
				h.log.Info("reply throttled: this user was answered already", "pr", pr, "user", user)
				return nil
			}
		}
		n, err := tx.Replies(ctx, repo.FullName(), pr, "", kind, tx.Now().Add(-time.Hour))
		if err != nil {
			return err
		}
		if n >= maxRepliesPerHour {
			h.log.Warn("reply throttled: too many replies on this pull request this hour", "pr", pr, "user", user)
			return nil
		}
		if err := tx.RecordReply(ctx, repo.FullName(), pr, user, kind); err != nil {
			return err
		}
		_, err = tx.Enqueue(ctx, replyJob{Repo: repo.FullName(), PR: pr, Installation: h.inst, Body: body, Key: h.delivery.ID}, nil)
		return err
	}
}

// runCommand benches a commit of the pull request on a user's request: the
// head, if it has not moved since the comment was written, or the commit
// the command names with @<sha>. The bench is pinned to that commit.
func (h *handling) runCommand(ctx context.Context, c *github.Client, repo Repo, t Target, cmd Command, user string, written time.Time) (apply, error) {
	reply := func(body string) apply { return h.throttledReply(repo, t.PR, user, "command", body) }
	var rec state.Pull
	if err := h.bot.state.View(ctx, func(tx *state.Tx) (err error) {
		rec, _, err = tx.Pull(ctx, repo.FullName(), t.PR)
		return err
	}); err != nil {
		return nil, err
	}
	pr, lagging, err := h.readPull(ctx, c, repo, t.PR, rec.HeadSHA, rec.HeadSince)
	if err != nil {
		return nil, err
	}
	if pr.GetState() == "closed" {
		return reply("This pull request is closed; there is nothing to bench."), nil
	}
	head := pr.GetHead().GetSHA()
	readAt := pr.GetUpdatedAt().Time
	fork := pr.GetHead().GetRepo().GetFullName() != pr.GetBase().GetRepo().GetFullName() || pr.GetHead().GetRepo().GetFork()
	if lagging {
		head, readAt = rec.HeadSHA, rec.HeadSince
	}
	t.SHA = head
	explicit := cmd.SHA != ""
	if explicit {
		if !strings.HasPrefix(head, cmd.SHA) && len(cmd.SHA) < 40 {
			return reply(fmt.Sprintf("`%s` is not this pull request's head (%s): give the full 40-digit SHA of the commit to bench.", cmd.SHA, short(head))), nil
		}
		if strings.HasPrefix(head, cmd.SHA) {
			t.SHA = head
		} else {
			t.SHA = cmd.SHA
		}
	}
	if repo.DefaultBranch == "" {
		repo.DefaultBranch = pr.GetBase().GetRepo().GetDefaultBranch()
	}
	reg := registryAt{c: c, owner: t.Owner, repo: t.Repo, sha: t.SHA}
	var p plan
	if len(cmd.Intents) > 0 {
		if p, err = reg.planIntents(ctx, cmd.Intents); err == nil {
			// Each named intent's domain as the pull request's changes
			// choose, as for an automatic bench (the bench reads the diff).
			p.Base = pr.GetBase().GetSHA()
		}
	} else {
		var files []string
		if files, err = listFiles(ctx, c, t); err == nil {
			p, err = reg.planFiles(ctx, files, pr.GetBase().GetSHA())
		}
	}
	var unknown *UnknownIntentsError
	switch {
	case errors.Is(err, ErrNoConfig):
		return reply(fmt.Sprintf("Commit %s has no `.pairbench.yml`, so this repository is not a pairbench registry there.", short(t.SHA))), nil
	case errors.As(err, &unknown):
		return reply(fmt.Sprintf("Commit %s has no intent %s. `/bench help` shows the usage.", short(t.SHA), codeList(unknown.IDs))), nil
	case isNotFound(err) && explicit:
		return reply(fmt.Sprintf("There is no commit %s in this repository.", short(t.SHA))), nil
	case err != nil:
		return nil, err
	case len(p.Domains) == 0:
		return reply(fmt.Sprintf("Nothing to bench: at %s this pull request changes no domain that has intents. Name intents with `/bench run INTENT ...`.", short(t.SHA))), nil
	}
	if p.FailOn, err = reg.failOnAt(ctx, pr.GetBase().GetSHA()); err != nil {
		return nil, err
	}
	if cmd.Against == AgainstNone {
		p.Base = "" // every domain against no tools
	}
	return func(ctx context.Context, tx *state.Tx) error {
		pull, err := h.lockPull(ctx, tx, repo, t.PR)
		if err != nil {
			return err
		}
		// An approval is of what the maintainer saw: a head that moved after
		// the comment, or that the service has not seen arrive, is refused.
		moved := pull.HeadSHA != "" && pull.HeadSHA != head || pull.HeadSince.After(written)
		if readAt.IsZero() {
			readAt = tx.Now()
		}
		switch {
		case pull.HeadSHA == "" && fork && !explicit:
			// A fork's pull request the service never heard of: which commit
			// the maintainer reviewed is unknown, so only a named one is benched.
			pull.HeadSHA, pull.HeadSince = head, readAt
			if err := tx.SavePull(ctx, pull); err != nil {
				return err
			}
			return reply(fmt.Sprintf("@%s: pairbench has no record of this pull request's commits, so it cannot tell which one you reviewed. "+
				"Review the commit to bench and comment `/bench run @<sha>` with its full SHA (the head is `%s`).", user, head))(ctx, tx)
		case pull.HeadSHA == "":
			pull.HeadSHA = head // a pull request the service never heard of: its head's age is unknown
		case pull.HeadSHA != head && !readAt.Before(pull.HeadSince.Truncate(time.Second)):
			pull.HeadSHA, pull.HeadSince = head, readAt
			// A read older than the record (a head recorded since the read)
			// never moves the head back.
		}
		if !explicit && moved {
			if err := tx.SavePull(ctx, pull); err != nil {
				return err
			}
			return reply(fmt.Sprintf("@%s: the head moved to `%s` after your comment. Review it and comment `/bench run` again, "+
				"or `/bench run @<sha>` to bench the commit you reviewed.", user, short(pull.HeadSHA)))(ctx, tx)
		}
		if pull.Bench != "" {
			// A late delivery: a bench of the commit started after the
			// comment was written already answers it.
			cur, found, err := tx.Bench(ctx, pull.Bench)
			if err != nil {
				return err
			}
			if found && !cur.Over() && cur.SHA == t.SHA && writtenBefore(written, cur) {
				if err := tx.SavePull(ctx, pull); err != nil {
					return err
				}
				return reply(fmt.Sprintf("@%s: run `%s`, started after your comment, is benching `%s` already.", user, cur.Run, short(t.SHA)))(ctx, tx)
			}
		}
		bn, err := h.bot.startBench(ctx, tx, &pull, t.SHA, p, cmd, user)
		if err != nil {
			return err
		}
		if err := tx.SavePull(ctx, pull); err != nil {
			return err
		}
		return reply(fmt.Sprintf("@%s: benching `%s` — %s — as run `%s`. The `%s` check shows its progress.",
			user, short(t.SHA), describe(bn), bn.Run, CheckName))(ctx, tx)
	}, nil
}

// workflowRun ends the bench whose Actions run completed. Only a run the
// service dispatched counts: it ran for a workflow_dispatch, its head
// repository is the repository itself, and its id is the one recorded at
// dispatch. A fork's pull_request run can take any title, but none of these.
//
// GitHub may deliver a fast run's start or completion before the dispatch
// job has recorded the id it was answered with (or found by the run's
// title). Then the run's title, "pairbench <run id>", names the bench, as it
// does for the dispatch's own look-up (findRun): a bench of this repository
// on Actions, still open and with no run recorded, takes the run as its own
// (and ends, if it completed), in the transaction that locks it. The
// dispatch, recording after it, finds the run recorded and leaves the bench
// alone, so the end is neither lost nor doubled, whichever replica handles
// which first.
//
// A bench dispatched twice (a lost answer to the dispatch, a lagging run
// listing) has two runs: the first recorded keeps the bench, and the other,
// seen here while it has not completed, is cancelled so it does not hold a
// runner for a whole bench.
func (h *handling) workflowRun(ctx context.Context) (apply, error) {
	var ev github.WorkflowRunEvent
	if err := decode("workflow_run", h.delivery.Payload, &ev); err != nil {
		return nil, err
	}
	h.setInstallation(ev.GetInstallation())
	wr := ev.GetWorkflowRun()
	completed := ev.GetAction() == "completed"
	if !slices.Contains([]string{"requested", "in_progress", "completed"}, ev.GetAction()) || path.Base(wr.GetPath()) != h.bot.cfg.Workflow {
		return nil, nil
	}
	repo := repoOf(ev.GetRepo(), h.inst)
	log := h.log.With("workflow_run", wr.GetID(), "action", ev.GetAction())
	if wr.GetEvent() != "workflow_dispatch" || wr.GetHeadRepository().GetFullName() != ev.GetRepo().GetFullName() {
		log.Info("workflow run ignored: not one the service dispatched", "event", wr.GetEvent(), "head_repository", wr.GetHeadRepository().GetFullName())
		return nil, nil
	}
	return func(ctx context.Context, tx *state.Tx) error {
		bn, found, err := tx.BenchOfWorkflowRun(ctx, repo.FullName(), wr.GetID())
		if err != nil {
			return err
		}
		if !found {
			var named bool
			if bn, named, err = benchNamedByRun(ctx, tx, repo, wr); err != nil || !named {
				if err == nil {
					log.Info("workflow run ignored: the service did not dispatch it", "title", wr.GetDisplayTitle())
				}
				return err
			}
			switch {
			case bn.WorkflowRunID == wr.GetID():
				// Recorded meanwhile by the dispatch, which held the lock.
			case bn.WorkflowRunID != 0 && completed:
				log.Info("workflow run ignored: its bench has another run recorded", "run", bn.Run, "recorded", bn.WorkflowRunID)
				return nil
			case bn.WorkflowRunID != 0:
				log.Warn("a second workflow run of a bench: cancelling it", "run", bn.Run, "recorded", bn.WorkflowRunID)
				return cancelDuplicate(ctx, tx, bn, wr.GetID())
			case bn.Over():
				log.Info("workflow run ignored: its bench ended before any run was recorded", "run", bn.Run)
				return nil
			default:
				if err := recordRun(ctx, tx, bn, wr.GetID(), wr.GetHTMLURL()); err != nil {
					return err
				}
				log.Info("workflow run taken by its title: it was delivered before its dispatch was recorded", "run", bn.Run)
			}
		}
		if !completed {
			return nil
		}
		return finishFromWorkflow(ctx, tx, bn, wr.GetConclusion(), wr.GetHTMLURL())
	}, nil
}

// benchNamedByRun finds the bench wr's title names, locked: an Actions
// bench of repo, in the top-up the title names (a run of the bench before
// /bench more reopened it is not the reopened bench's). The caller decides
// what wr is to it by the run recorded.
func benchNamedByRun(ctx context.Context, tx *state.Tx, repo Repo, wr *github.WorkflowRun) (state.Bench, bool, error) {
	id, topUp, ok := runIDFromTitle(wr.GetDisplayTitle())
	if !ok {
		return state.Bench{}, false, nil
	}
	bn, found, err := tx.LockBench(ctx, string(id))
	if err != nil || !found || bn.Repo != repo.FullName() || bn.Backend != BackendActions || bn.TopUps != topUp {
		return state.Bench{}, false, err
	}
	return bn, true, nil
}

// finishFromWorkflow queues the end of a bench whose Actions run completed.
func finishFromWorkflow(ctx context.Context, tx *state.Tx, bn state.Bench, conclusion, url string) error {
	if bn.Over() {
		return nil
	}
	job := finishJob{Run: bn.Run, OK: conclusion == "success"}
	if !job.OK {
		job.Reason = fmt.Sprintf("The Actions run %s concluded %q.", url, conclusion)
	}
	_, err := tx.Enqueue(ctx, job, pendingOnce)
	return err
}

// checkRun re-runs a bench when someone with write access presses
// "Re-run" on its check run. For a fork's pull request GitHub lists no pull
// request; the run id in the check's external_id names it.
func (h *handling) checkRun(ctx context.Context) (apply, error) {
	var ev github.CheckRunEvent
	if err := decode("check_run", h.delivery.Payload, &ev); err != nil {
		return nil, err
	}
	h.setInstallation(ev.GetInstallation())
	cr := ev.GetCheckRun()
	if ev.GetAction() != "rerequested" || cr.GetName() != CheckName {
		return nil, nil
	}
	pr := 0
	if len(cr.PullRequests) > 0 {
		pr = cr.PullRequests[0].GetNumber()
	} else if n, _, ok := parseRunID(runOfCheck(cr.GetExternalID())); ok {
		pr = n
	}
	return h.rerun(ctx, ev.GetRepo(), pr, cr.GetHeadSHA(), ev.GetSender().GetLogin())
}

// checkSuite re-runs a bench when someone presses "Re-run all checks". A
// fork's suite lists no pull request; the service's own records of the
// commit name it.
func (h *handling) checkSuite(ctx context.Context) (apply, error) {
	var ev github.CheckSuiteEvent
	if err := decode("check_suite", h.delivery.Payload, &ev); err != nil {
		return nil, err
	}
	h.setInstallation(ev.GetInstallation())
	cs := ev.GetCheckSuite()
	if ev.GetAction() != "rerequested" {
		return nil, nil
	}
	pr := 0
	if len(cs.PullRequests) > 0 {
		pr = cs.PullRequests[0].GetNumber()
	} else {
		repo := repoOf(ev.GetRepo(), h.inst)
		if err := h.bot.state.View(ctx, func(tx *state.Tx) error {
			benches, err := tx.BenchesOfCommit(ctx, repo.FullName(), cs.GetHeadSHA())
			if len(benches) > 0 {
				pr = benches[0].PR
			}
			return err
		}); err != nil {
			return nil, err
		}
	}
	return h.rerun(ctx, ev.GetRepo(), pr, cs.GetHeadSHA(), ev.GetSender().GetLogin())
}

// rerun benches sha of pull request pr for user, as "/bench run @<sha>".
func (h *handling) rerun(ctx context.Context, r *github.Repository, pr int, sha, user string) (apply, error) {
	if pr == 0 || sha == "" {
		h.log.Info("re-run ignored: no pull request known for the commit", "sha", short(sha))
		return nil, nil
	}
	repo := repoOf(r, h.inst)
	t := Target{Owner: repo.Owner, Repo: repo.Name, PR: pr}
	c, err := h.client(ctx)
	if err != nil {
		return nil, err
	}
	if ok, err := canWrite(ctx, c, t, user); err != nil || !ok {
		if err == nil {
			h.log.Info("re-run refused: no write access", "user", user)
		}
		return nil, err
	}
	return h.runCommand(ctx, c, repo, t, Command{Verb: VerbRun, SHA: sha}, user, time.Time{})
}

func (h *handling) setInstallation(i *github.Installation) {
	if h.inst == 0 {
		h.inst = i.GetID()
	}
}

func (h *handling) client(ctx context.Context) (*github.Client, error) {
	c, err := h.bot.cfg.Clients.Client(ctx, h.inst)
	if err != nil {
		return nil, fmt.Errorf("github client for installation %d: %w", h.inst, err)
	}
	return c, nil
}

// lockPull locks the pull request's record, noting its installation and
// default branch.
func (h *handling) lockPull(ctx context.Context, tx *state.Tx, repo Repo, pr int) (state.Pull, error) {
	pull, err := tx.LockPull(ctx, repo.FullName(), pr)
	if err != nil {
		return pull, err
	}
	if h.inst != 0 {
		pull.Installation = h.inst
	}
	if repo.DefaultBranch != "" {
		pull.DefaultBranch = repo.DefaultBranch
	}
	return pull, nil
}

func repoOf(r *github.Repository, inst int64) Repo {
	return Repo{Owner: r.GetOwner().GetLogin(), Name: r.GetName(), DefaultBranch: r.GetDefaultBranch(), Installation: inst}
}

// canWrite reports whether user has write access (write, maintain or
// admin) to the repository.
func canWrite(ctx context.Context, c *github.Client, t Target, user string) (bool, error) {
	p, _, err := c.Repositories.GetPermissionLevel(ctx, t.Owner, t.Repo, user)
	if isNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("permission of %s on %s/%s: %w", user, t.Owner, t.Repo, err)
	}
	return slices.Contains([]string{"admin", "write"}, p.GetPermission()), nil
}

// listFiles returns the paths a pull request changes, every page of them.
func listFiles(ctx context.Context, c *github.Client, t Target) ([]string, error) {
	var out []string
	opts := &github.ListOptions{PerPage: 100}
	for {
		files, resp, err := c.PullRequests.ListFiles(ctx, t.Owner, t.Repo, t.PR, opts)
		if err != nil {
			return nil, fmt.Errorf("list files of %s/%s#%d: %w", t.Owner, t.Repo, t.PR, err)
		}
		for _, f := range files {
			out = append(out, f.GetFilename())
			if f.GetPreviousFilename() != "" {
				out = append(out, f.GetPreviousFilename())
			}
		}
		if resp.NextPage == 0 {
			return out, nil
		}
		opts.Page = resp.NextPage
	}
}

// codeList renders names as a list of code spans. Names may come from a
// pull request, so a backtick cannot end its span early.
func codeList(xs []string) string {
	q := make([]string, len(xs))
	for i, x := range xs {
		q[i] = "`" + strings.ReplaceAll(x, "`", "'") + "`"
	}
	return strings.Join(q, ", ")
}

func domainList(ds []string) string {
	if len(ds) == 1 {
		return "domain " + codeList(ds)
	}
	return "domains " + codeList(ds)
}
