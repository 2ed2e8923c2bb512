package bot

import (
	"context"
	"fmt"
	"time"

	"github.com/google/go-github/v66/github"
)

// GitHub's API may lag behind its own webhooks: GET /pulls/N can still
// show the head a push replaced after the push's pull_request event, or the
// head the service recorded, arrived. A read older than what the service
// knows is never taken for the head: the delivery is tried again (without
// spending an attempt) until the read catches up, for lagPatience after the
// delivery arrived; then what the service knows stands.
const lagPatience = 2 * time.Minute

// lagError asks for the delivery to be tried again after wait: GitHub's
// API answered with an older pull request than the service knows.
type lagError struct {
	pr   int
	wait time.Duration
}

func (e *lagError) Error() string {
	return fmt.Sprintf("GitHub's API shows pull request #%d older than its webhook; trying again in %s", e.pr, e.wait)
}

// readPull reads pull request n. The service knows that its head was known
// at knownSince (a webhook's updated_at, a recorded head's time): a read
// showing another head and updated before then is older than that
// knowledge, and is refused with a *lagError while the delivery is younger
// than lagPatience. lagging reports a read that still lags after that.
func (h *handling) readPull(ctx context.Context, c *github.Client, repo Repo, n int, known string, knownSince time.Time) (pr *github.PullRequest, lagging bool, err error) {
	pr, _, err = c.PullRequests.Get(ctx, repo.Owner, repo.Name, n)
	if err != nil {
		return nil, false, fmt.Errorf("get %s#%d: %w", repo.FullName(), n, err)
	}
	if known == "" || pr.GetHead().GetSHA() == known || !pr.GetUpdatedAt().Time.Before(knownSince.Truncate(time.Second)) {
		return pr, false, nil
	}
	age := time.Since(h.delivery.ReceivedAt)
	if age < lagPatience {
		return nil, false, &lagError{pr: n, wait: min(max(age/2, time.Second), 15*time.Second)}
	}
	h.log.Warn("GitHub's API still shows an older pull request than the service knows; what the service knows stands",
		"pr", n, "read_head", short(pr.GetHead().GetSHA()), "read_updated", pr.GetUpdatedAt().Time, "known_head", short(known), "known_since", knownSince)
	return pr, true, nil
}
