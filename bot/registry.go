package bot

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path"
	"slices"
	"strings"

	"github.com/google/go-github/v66/github"

	"github.com/pairbench/pairbench/intents/config"
)

// ErrNoConfig is returned (wrapped) when the commit has no .pairbench.yml:
// the repository is not a registry and the bot leaves it alone.
var ErrNoConfig = errors.New("no " + config.File)

// Bounds on what the bot reads from a registry through the API.
const (
	maxIntentFiles  = 200
	maxRegistryFile = 1 << 20
)

// registryAt reads a registry at one commit through the contents API. For
// planning it reads only what planning needs — the configuration and the id
// of each intent; the registry is checked in full at the same SHA by the
// runner, or for the Actions backend before the dispatch (contentsFS,
// Config.CheckRegistry).
type registryAt struct {
	c                *github.Client
	owner, repo, sha string
}

// config reads .pairbench.yml with intents' own parser. A configuration
// with problems still plans (intents puts its defaults in place of what is
// wrong): the registry's full check at the same SHA fails the bench,
// quoting every problem by file and line.
func (r registryAt) config(ctx context.Context) (config.Config, error) {
	data, err := r.file(ctx, config.File)
	if isNotFound(err) {
		return config.Config{}, fmt.Errorf("%s at %s: %w", r.owner+"/"+r.repo, r.sha, ErrNoConfig)
	}
	if err != nil {
		return config.Config{}, err
	}
	cfg, err := config.Parse(config.File, data)
	var ps config.Problems
	if errors.As(err, &ps) {
		return cfg, nil
	}
	return cfg, err
}

// domainsFor returns the domains, sorted, that changes to files concern,
// as config.Comparisons decides for the service and the Action alike:
// files under a domain's directory or intent directory, or matching its
// globs in the configuration. Only valid domain names pass: names come
// from the pull request and end up in workflow inputs.
func domainsFor(cfg config.Config, files []string) []string {
	var out []string
	for _, c := range config.Comparisons(cfg, files, nil) {
		out = append(out, c.Domain)
	}
	return out
}

// intentIDs returns the ids of the intents of domain, sorted; a domain
// without an intent directory has none. With limit above 0 it stops
// reading intent files once it has that many ids (one call each).
func (r registryAt) intentIDs(ctx context.Context, cfg config.Config, domain string, limit int) ([]string, error) {
	entries, err := r.dir(ctx, path.Join(cfg.Paths.Intents, domain))
	if isNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, e := range entries {
		name := e.GetName()
		ext := path.Ext(name)
		if e.GetType() != "file" || strings.HasPrefix(name, ".") || (ext != ".yaml" && ext != ".yml") {
			continue
		}
		if len(ids) == maxIntentFiles {
			return nil, fmt.Errorf("domain %s has more than %d intent files", domain, maxIntentFiles)
		}
		data, err := r.file(ctx, e.GetPath())
		if err != nil {
			return nil, err
		}
		id := config.IntentID(e.GetPath(), data)
		if id == "" {
			// The runner reports the broken file; the bot only plans.
			continue
		}
		ids = append(ids, id)
		if len(ids) == limit {
			break
		}
	}
	slices.Sort(ids)
	return slices.Compact(ids), nil
}

// domainDirs lists the domains that have an intent directory.
func (r registryAt) domainDirs(ctx context.Context, cfg config.Config) ([]string, error) {
	entries, err := r.dir(ctx, cfg.Paths.Intents)
	if isNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if e.GetType() == "dir" && !strings.HasPrefix(e.GetName(), ".") {
			out = append(out, e.GetName())
		}
	}
	slices.Sort(out)
	return out, nil
}

func (r registryAt) file(ctx context.Context, p string) ([]byte, error) {
	f, _, _, err := r.c.Repositories.GetContents(ctx, r.owner, r.repo, p, &github.RepositoryContentGetOptions{Ref: r.sha})
	if err != nil {
		return nil, fmt.Errorf("read %s at %s: %w", p, short(r.sha), err)
	}
	if f == nil {
		return nil, fmt.Errorf("read %s at %s: a directory, not a file", p, short(r.sha))
	}
	if f.GetSize() > maxRegistryFile {
		return nil, fmt.Errorf("read %s at %s: larger than %d bytes", p, short(r.sha), maxRegistryFile)
	}
	s, err := f.GetContent()
	if err != nil {
		return nil, fmt.Errorf("read %s at %s: %w", p, short(r.sha), err)
	}
	return []byte(s), nil
}

func (r registryAt) dir(ctx context.Context, p string) ([]*github.RepositoryContent, error) {
	f, entries, _, err := r.c.Repositories.GetContents(ctx, r.owner, r.repo, p, &github.RepositoryContentGetOptions{Ref: r.sha})
	if err != nil {
		return nil, fmt.Errorf("list %s at %s: %w", p, short(r.sha), err)
	}
	if f != nil {
		return nil, fmt.Errorf("list %s at %s: a file, not a directory", p, short(r.sha))
	}
	return entries, nil
}

// plan is what a bench covers.
type plan struct {
	Domains []string
	// Intents are the ids a command named (planIntents); a plan of the
	// changed files (planFiles) benches every intent of Domains and leaves
	// it empty.
	Intents []string
	// Base is the pull request's base commit, for a plan of the changed
	// files: the bench benches each domain as config.Comparisons chooses
	// from the diff (tools changed: against Base's tools; new, or intents
	// alone changed: against no tools).
	Base string
	// FailOn is .pairbench.yml's fail_on at the pull request's base
	// commit (failOnAt): what fails the bench's check run ("" lets the
	// verdict decide).
	FailOn string
}

// failOnAt reads fail_on from .pairbench.yml at commit base, the pull
// request's base: the gate is the base branch's, as branch protection is,
// so a pull request cannot lift it by editing its own copy. A base
// without the file, or "" for base, gates nothing.
func (r registryAt) failOnAt(ctx context.Context, base string) (string, error) {
	if base == "" {
		return "", nil
	}
	r.sha = base
	cfg, err := r.config(ctx)
	if errors.Is(err, ErrNoConfig) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return strings.Join(cfg.FailOnLabels(), ","), nil
}

// planFiles plans a bench of the domains that files (the pull request's
// changes since base, its base commit) concern and that have intents at
// the commit. An empty plan means nothing to bench. One intent read per
// domain says it has intents: the bench reads them all.
func (r registryAt) planFiles(ctx context.Context, files []string, base string) (plan, error) {
	cfg, err := r.config(ctx)
	if err != nil {
		return plan{}, err
	}
	p := plan{Base: base}
	for _, d := range domainsFor(cfg, files) {
		ids, err := r.intentIDs(ctx, cfg, d, 1)
		if err != nil {
			return plan{}, err
		}
		if len(ids) > 0 {
			p.Domains = append(p.Domains, d)
		}
	}
	return p, nil
}

// UnknownIntentsError reports intents a command named that the registry
// does not have at the commit.
type UnknownIntentsError struct{ IDs []string }

func (e *UnknownIntentsError) Error() string {
	return "no intent " + strings.Join(e.IDs, ", ")
}

// planIntents plans a bench of the named intents, wherever they are.
func (r registryAt) planIntents(ctx context.Context, want []string) (plan, error) {
	cfg, err := r.config(ctx)
	if err != nil {
		return plan{}, err
	}
	domains, err := r.domainDirs(ctx, cfg)
	if err != nil {
		return plan{}, err
	}
	missing := map[string]bool{}
	for _, id := range want {
		missing[id] = true
	}
	var p plan
	for _, d := range domains {
		if len(missing) == 0 {
			break
		}
		ids, err := r.intentIDs(ctx, cfg, d, 0)
		if err != nil {
			return plan{}, err
		}
		found := false
		for _, id := range ids {
			if missing[id] {
				delete(missing, id)
				p.Intents = append(p.Intents, id)
				found = true
			}
		}
		if found {
			p.Domains = append(p.Domains, d)
		}
	}
	if len(missing) > 0 {
		ids := make([]string, 0, len(missing))
		for id := range missing {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		return plan{}, &UnknownIntentsError{IDs: ids}
	}
	slices.Sort(p.Intents)
	return p, nil
}

// isNotFound reports whether err is GitHub's 404.
func isNotFound(err error) bool {
	var e *github.ErrorResponse
	return errors.As(err, &e) && e.Response != nil && e.Response.StatusCode == http.StatusNotFound
}

// short abbreviates a commit SHA to 7 characters.
func short(sha string) string {
	if len(sha) > 7 {
		return sha[:7]
	}
	return sha
}
