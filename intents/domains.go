package intents

import (
	"path"
	"slices"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

// DomainsFor returns the domains, sorted, that changes to files concern: a
// file under a domain's directory or intent directory, or matching one of the
// domain's globs in Config.Domains. files are slash paths relative to the
// registry root.
func (r *Registry) DomainsFor(files []string) []string {
	var out []string
	for _, d := range r.Domains {
		if slices.ContainsFunc(files, func(f string) bool { return r.concerns(d.Name, f) }) {
			out = append(out, d.Name)
		}
	}
	return out
}

func (r *Registry) concerns(domain, file string) bool {
	file = path.Clean(file)
	for _, dir := range []string{r.Config.Paths.Domains, r.Config.Paths.Intents} {
		if strings.HasPrefix(file, path.Join(dir, domain)+"/") {
			return true
		}
	}
	for _, g := range r.Config.Domains[domain] {
		if ok, _ := doublestar.Match(g, file); ok {
			return true
		}
	}
	return false
}

// Has reports whether the registry has domain: Comparisons' inBase for a
// base registry read whole.
func (r *Registry) Has(domain string) bool { return r.Domain(domain) != nil }
