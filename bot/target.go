package bot

import (
	"fmt"
	"regexp"
	"strings"
)

var (
	repoPattern = regexp.MustCompile(`^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$`)
	shaPattern  = regexp.MustCompile(`^([0-9a-f]{40}|[0-9a-f]{64})$`)
)

// ParseTarget reads the pull request a verdict is posted on: repo as
// OWNER/NAME, its number, and the head commit benched as its full
// lowercase hex id (SHA-1 or SHA-256). The errors name pairbench post's
// flags.
func ParseTarget(repo string, pr int, sha string) (Target, error) {
	switch {
	case !repoPattern.MatchString(repo):
		return Target{}, fmt.Errorf("--repo %q: want OWNER/NAME", repo)
	case pr < 1:
		return Target{}, fmt.Errorf("--pr %d: want a pull request number", pr)
	case !shaPattern.MatchString(sha):
		return Target{}, fmt.Errorf("--sha %q: want the full lowercase hex commit id", sha)
	}
	owner, name, _ := strings.Cut(repo, "/")
	return Target{Owner: owner, Repo: name, PR: pr, SHA: sha}, nil
}
