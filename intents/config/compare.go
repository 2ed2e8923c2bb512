package config

import (
	"path"
	"slices"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

// Against is what a pull request benches a domain's tools against.
type Against string

const (
	// AgainstBase benches head's tools against the base's: --against BASE.
	AgainstBase Against = "base"
	// AgainstNone benches head's tools against no tools.
	AgainstNone Against = "none"
)

// Comparison is how a pull request benches one domain.
type Comparison struct {
	Domain string
	// Against lists the comparisons, AgainstBase first: one, or both
	// when the configuration asks (compare: both).
	Against []Against
	// New is true when the base has no such domain.
	New bool
	// ToolsChanged is true when the pull request changes the domain's
	// directory (its tools, domain.json, context pack) or a file its
	// globs in Config.Domains match.
	ToolsChanged bool
}

// Comparisons decides, from the files a pull request changes (slash paths
// relative to the registry root) and head's configuration, which domains
// it benches and against what, in domain order:
//
//   - a domain the base does not have (inBase false): head against no tools;
//   - a domain whose tools changed: head against base, and also against no
//     tools when cfg.Compare is CompareBoth;
//   - a domain whose intents alone changed: head against no tools, the
//     tools being the same on both sides;
//   - a domain nothing changed of: not benched (not listed).
//
// Only valid domain names are listed: names come from the pull request.
// The service (package bot) and the Action (pairbench compare) both call it.
func Comparisons(cfg Config, changed []string, inBase func(domain string) bool) []Comparison {
	paths := cfg.Paths
	if paths.Domains == "" {
		paths.Domains = DefaultPaths.Domains
	}
	if paths.Intents == "" {
		paths.Intents = DefaultPaths.Intents
	}
	tools, intentsOnly := map[string]bool{}, map[string]bool{}
	for _, f := range changed {
		f = path.Clean(f)
		if name, ok := domainUnder(f, paths.Domains); ok {
			tools[name] = true
		}
		if name, ok := domainUnder(f, paths.Intents); ok {
			intentsOnly[name] = true
		}
		for d, globs := range cfg.Domains {
			if !ValidDomainName(d) {
				continue
			}
			for _, g := range globs {
				if ok, _ := doublestar.Match(g, f); ok {
					tools[d] = true
				}
			}
		}
	}
	var names []string
	for d := range tools {
		names = append(names, d)
	}
	for d := range intentsOnly {
		if !tools[d] {
			names = append(names, d)
		}
	}
	slices.Sort(names)
	var out []Comparison
	for _, d := range names {
		c := Comparison{Domain: d, ToolsChanged: tools[d], New: inBase != nil && !inBase(d)}
		switch {
		case c.New || !c.ToolsChanged:
			c.Against = []Against{AgainstNone}
		case cfg.Compare == CompareBoth:
			c.Against = []Against{AgainstBase, AgainstNone}
		default:
			c.Against = []Against{AgainstBase}
		}
		out = append(out, c)
	}
	return out
}

// domainUnder returns the domain whose directory under dir holds file.
func domainUnder(file, dir string) (string, bool) {
	rest, ok := strings.CutPrefix(file, dir+"/")
	if !ok {
		return "", false
	}
	name, _, isDir := strings.Cut(rest, "/")
	return name, isDir && ValidDomainName(name)
}

// AgainstNoneRunID is the id of the run that benches against no tools the
// domains a run of id benched against base whose configuration asks for
// both comparisons (compare: both): the second comparison of a pull
// request's bench, which pairbench run (package bench) runs and the
// service (package bot) shows beside the first.
func AgainstNoneRunID(id string) string { return id + "-none" }
