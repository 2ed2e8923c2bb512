package bot

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/google/go-github/v66/github"
)

// pullRequest plans an automatic bench when a pull request's head changes
// or it becomes ready for review.
func (h *handling) pullRequest(ctx context.Context, ev *github.PullRequestEvent) error {
	switch ev.GetAction() {
	case "opened", "synchronize", "reopened", "ready_for_review":
	default:
		return nil
	}
	pr := ev.GetPullRequest()
	log := h.log.With("pr", pr.GetNumber(), "sha", short(pr.GetHead().GetSHA()))
	if pr.GetState() == "closed" {
		return nil
	}
	if pr.GetDraft() {
		log.Info("draft pull request: the bench waits until it is ready for review")
		return nil
	}
	repo := repoOf(ev.GetRepo(), h.inst)
	t := Target{Owner: repo.Owner, Repo: repo.Name, PR: pr.GetNumber(), SHA: pr.GetHead().GetSHA()}
	if running, ok := h.bot.running(t); ok && running.req.HeadSHA == t.SHA {
		log.Info("already benching this commit", "run", running.req.RunID)
		return nil
	}
	c, err := h.client(ctx)
	if err != nil {
		return err
	}
	files, err := listFiles(ctx, c, t)
	if err != nil {
		return err
	}
	p, err := registryAt{c: c, owner: t.Owner, repo: t.Repo, sha: t.SHA}.planFiles(ctx, files)
	if errors.Is(err, ErrNoConfig) {
		log.Info("no " + ".pairbench.yml at the head commit: not a registry, nothing to do")
		return nil
	}
	if err != nil {
		return err
	}
	if len(p.Domains) == 0 {
		log.Info("no domain with intents changed: nothing to bench")
		return nil
	}
	if why, ok := trusted(pr); !ok {
		// The older bench was for an older commit; a new push needs a new
		// approval, so it is stopped rather than left to post a stale verdict.
		h.bot.supersede(ctx, t, "A push of `"+short(t.SHA)+"` superseded this bench.")
		log.Info("untrusted pull request: asking a maintainer to approve", "reason", why)
		return reply(ctx, c, t, fmt.Sprintf(
			"This pull request changes %s, but it %s, so pairbench does not bench it on its own.\n\n"+
				"A maintainer can review commit `%s` and comment `/bench run` to bench exactly that commit. "+
				"The approval covers that commit only: after a new push, comment `/bench run` again.",
			domainList(p.Domains), why, short(t.SHA)))
	}
	_, err = h.bot.start(ctx, c, repo, t, p, Command{Verb: VerbRun}, "")
	return err
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
func (h *handling) issueComment(ctx context.Context, ev *github.IssueCommentEvent) error {
	// IsPullRequest, unlike the Get methods, does not accept a nil issue.
	if ev.GetAction() != "created" || ev.Issue == nil || !ev.Issue.IsPullRequest() || ev.GetComment().GetUser().GetType() == "Bot" {
		return nil
	}
	parsed := ParseComment(ev.GetComment().GetBody())
	if parsed.Ignored() {
		return nil
	}
	repo := repoOf(ev.GetRepo(), h.inst)
	user := ev.GetComment().GetUser().GetLogin()
	t := Target{Owner: repo.Owner, Repo: repo.Name, PR: ev.GetIssue().GetNumber()}
	log := h.log.With("pr", t.PR, "user", user)
	c, err := h.client(ctx)
	if err != nil {
		return err
	}
	ok, err := canWrite(ctx, c, t, user)
	if err != nil {
		return err
	}
	if !ok {
		log.Info("command refused: no write access")
		return reply(ctx, c, t, fmt.Sprintf("Sorry @%s, only people with write access to this repository can run `/bench` commands. "+
			"A maintainer can run `/bench run` for you.", user))
	}
	if _, _, err := c.Reactions.CreateIssueCommentReaction(ctx, t.Owner, t.Repo, ev.GetComment().GetID(), "eyes"); err != nil {
		log.Warn("could not react to the command", "err", err)
	}
	if parsed.Reply != "" {
		return reply(ctx, c, t, parsed.Reply)
	}
	switch cmd := parsed.Command; cmd.Verb {
	case VerbRun:
		return h.runCommand(ctx, c, repo, t, *cmd, user, "")
	case VerbCancel:
		return h.bot.cancelCommand(ctx, c, t, user)
	case VerbStatus:
		return reply(ctx, c, t, h.bot.status(t))
	}
	return nil
}

// runCommand benches the pull request's head commit (or sha, if set) on a
// user's request. The bench is pinned to that commit: a later push is not
// covered by this approval.
func (h *handling) runCommand(ctx context.Context, c *github.Client, repo Repo, t Target, cmd Command, user, sha string) error {
	pr, _, err := c.PullRequests.Get(ctx, t.Owner, t.Repo, t.PR)
	if err != nil {
		return fmt.Errorf("get %s#%d: %w", repo.FullName(), t.PR, err)
	}
	if pr.GetState() == "closed" {
		return reply(ctx, c, t, "This pull request is closed; there is nothing to bench.")
	}
	t.SHA = pr.GetHead().GetSHA()
	if sha != "" {
		t.SHA = sha
	}
	if repo.DefaultBranch == "" {
		repo.DefaultBranch = pr.GetBase().GetRepo().GetDefaultBranch()
	}
	reg := registryAt{c: c, owner: t.Owner, repo: t.Repo, sha: t.SHA}
	var p plan
	if len(cmd.Intents) > 0 {
		p, err = reg.planIntents(ctx, cmd.Intents)
	} else {
		var files []string
		if files, err = listFiles(ctx, c, t); err == nil {
			p, err = reg.planFiles(ctx, files)
		}
	}
	var unknown *UnknownIntentsError
	switch {
	case errors.Is(err, ErrNoConfig):
		return reply(ctx, c, t, fmt.Sprintf("Commit `%s` has no `.pairbench.yml`, so this repository is not a pairbench registry there.", short(t.SHA)))
	case errors.As(err, &unknown):
		return reply(ctx, c, t, fmt.Sprintf("Commit `%s` has no intent %s. `/bench help` shows the usage.", short(t.SHA), codeList(unknown.IDs)))
	case err != nil:
		return err
	case len(p.Domains) == 0:
		return reply(ctx, c, t, fmt.Sprintf("Nothing to bench: at `%s` this pull request changes no domain that has intents. Name intents with `/bench run INTENT ...`.", short(t.SHA)))
	}
	b, err := h.bot.start(ctx, c, repo, t, p, cmd, user)
	if err != nil {
		return err
	}
	return reply(ctx, c, t, fmt.Sprintf("@%s: benching `%s` — %s — as run `%s`. The `%s` check shows its progress.",
		user, short(t.SHA), describe(b.req), b.req.RunID, CheckName))
}

// workflowRun ends the bench whose Actions run completed.
func (h *handling) workflowRun(ctx context.Context, ev *github.WorkflowRunEvent) error {
	wr := ev.GetWorkflowRun()
	if ev.GetAction() != "completed" || path.Base(wr.GetPath()) != h.bot.cfg.Workflow {
		return nil
	}
	id, ok := runIDFromTitle(wr.GetDisplayTitle())
	if !ok {
		return nil
	}
	repo := repoOf(ev.GetRepo(), h.inst)
	be, err := h.bot.claim(ctx, repo, id)
	if err != nil || be == nil {
		return err
	}
	if wr.GetConclusion() != "success" {
		return h.bot.fail(ctx, be, fmt.Sprintf("The Actions run %s concluded %q.", wr.GetHTMLURL(), wr.GetConclusion()))
	}
	return h.bot.complete(ctx, be)
}

// checkRun re-runs a bench when someone with write access presses
// "Re-run" on its check run.
func (h *handling) checkRun(ctx context.Context, ev *github.CheckRunEvent) error {
	cr := ev.GetCheckRun()
	if ev.GetAction() != "rerequested" || cr.GetName() != CheckName || len(cr.PullRequests) == 0 {
		return nil
	}
	repo := repoOf(ev.GetRepo(), h.inst)
	t := Target{Owner: repo.Owner, Repo: repo.Name, PR: cr.PullRequests[0].GetNumber()}
	c, err := h.client(ctx)
	if err != nil {
		return err
	}
	user := ev.GetSender().GetLogin()
	if ok, err := canWrite(ctx, c, t, user); err != nil || !ok {
		return err
	}
	return h.runCommand(ctx, c, repo, t, Command{Verb: VerbRun}, user, cr.GetHeadSHA())
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

// reply posts a plain comment on the pull request.
func reply(ctx context.Context, c *github.Client, t Target, body string) error {
	if _, _, err := c.Issues.CreateComment(ctx, t.Owner, t.Repo, t.PR, &github.IssueComment{Body: &body}); err != nil {
		return fmt.Errorf("reply on %s/%s#%d: %w", t.Owner, t.Repo, t.PR, err)
	}
	return nil
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
