package rundir

import (
	"fmt"
	"net/url"
)

// Source is where a run's registry came from, as run.json records it.
type Source struct {
	// Repo is the git repository (URL or path); empty for a plain directory.
	Repo string `json:"repo,omitempty"`
	// Ref is the ref asked for (a branch, tag or commit).
	Ref string `json:"ref,omitempty"`
	// Commit is the commit the registry was read at.
	Commit string `json:"commit,omitempty"`
	// PRHead is set when Ref was gone (a deleted PR branch) and the
	// registry was read at refs/pull/<PR>/head, the PR's last head, instead.
	PRHead bool `json:"pr_head,omitempty"`
	PR     int  `json:"pr,omitempty"`
}

// String describes the source for logs and reports, without the
// credentials a repository URL may carry (https://user:token@host/...):
// a report is served and posted where anyone reading the pull request sees
// it.
func (s Source) String() string {
	if s.Repo == "" {
		return "local directory"
	}
	if u, err := url.Parse(s.Repo); err == nil && u.User != nil {
		u.User = nil
		s.Repo = u.String()
	}
	short := s.Commit
	if len(short) > 12 {
		short = short[:12]
	}
	if s.PRHead {
		return fmt.Sprintf("%s at %s (branch %s gone; read at refs/pull/%d/head, the PR's last head)", s.Repo, short, s.Ref, s.PR)
	}
	return fmt.Sprintf("%s %s at %s", s.Repo, s.Ref, short)
}
