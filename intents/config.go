package intents

import (
	"path"
	"reflect"
	"regexp"
	"slices"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
	"gopkg.in/yaml.v3"

	"github.com/pairbench/pairbench"
)

// ConfigFile is the registry's optional configuration file, at its root.
const ConfigFile = ".pairbench.yml"

// Config is a registry's .pairbench.yml (see docs/registry.md).
type Config struct {
	Paths Paths `yaml:"paths"`
	// Domains maps a domain to extra globs (doublestar syntax, relative to
	// the registry root) of files whose changes concern it, beyond its own
	// domain directory and intent directory.
	Domains map[string][]string `yaml:"domains"`
	// Margins are how much worse a pull request's tools may be than the
	// base's and still be "not worse" (docs/statistics.md,
	// Non-inferiority); a field left out takes its default.
	Margins Margins `yaml:"margins"`
	// Compare says how a pull request that changes a domain's tools is
	// benched: CompareBase (head against base, the default) or CompareBoth
	// (also head against no tools). See Comparisons.
	Compare string `yaml:"compare"`
	// FailOn names what fails a pull request's check run, comma-separated
	// as pairbench run --fail-on takes it ("worse, less accurate"): the
	// run's verdict or a benched intent's label, or "worse" (head worse
	// than base). Empty: the check's conclusion follows the verdict.
	FailOn string `yaml:"fail_on"`
}

// FailOnLabels returns FailOn's names, trimmed, without empty ones.
func (c Config) FailOnLabels() []string {
	var out []string
	for _, f := range strings.Split(c.FailOn, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// gateWorse is the non-inferiority result a gate may name beside the
// labels (stats.GateWorse).
const gateWorse = "worse"

// Margins are a registry's non-inferiority margins; zero means the
// default.
type Margins struct {
	// AccuracyPoints: at most this many percentage points less accurate.
	AccuracyPoints float64 `yaml:"accuracy_points"`
	// SlowerPercent: at most this much slower, in percent.
	SlowerPercent float64 `yaml:"slower_percent"`
}

// The values of Config.Compare.
const (
	CompareBase = "base"
	CompareBoth = "both"
)

// Paths says where a registry keeps its parts, relative to its root.
type Paths struct {
	// Domains holds one directory per domain: <Domains>/<domain>/domain.json.
	Domains string `yaml:"domains"`
	// Tools is the glob of a domain's tool files, relative to its directory.
	Tools string `yaml:"tools"`
	// Intents holds one directory per domain: <Intents>/<domain>/*.yaml.
	Intents string `yaml:"intents"`
}

// DefaultPaths is the layout a registry has without a .pairbench.yml.
var DefaultPaths = Paths{Domains: "domains", Tools: "tools/*.js", Intents: "bench/intents"}

// ParseConfig reads a registry's .pairbench.yml from data, as Load does;
// name is the file's name in positions. It returns the configuration with
// the defaults in place of what is missing or invalid, so a caller can
// still find its way in the registry, and, when anything is wrong (an
// unknown key, a path outside the registry, a bad glob, bad YAML), a
// Problems error naming each by file and line.
func ParseConfig(name string, data []byte) (Config, error) {
	var ps problems
	c, _ := decodeConfig(name, data, &ps)
	if len(ps.list) > 0 {
		ps.list.sort()
		return c, ps.list
	}
	return c, nil
}

// ValidDomainName reports whether name may name a domain: a lower-case host
// name, as a registry's domain directories are called.
func ValidDomainName(name string) bool { return domainName.MatchString(name) }

// domainName is what a domain directory may be called.
var domainName = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$`)

// decodeConfig reads .pairbench.yml, reporting problems in ps; missing paths
// take their defaults. It also returns the line of each key.
func decodeConfig(file string, data []byte, ps *problems) (Config, map[string]int) {
	var c Config
	lines := map[string]int{}
	// An empty file, or one of comments alone, takes every default.
	if emptyConfig(data) {
		return withDefaults(c), lines
	}
	if n := parseYAMLDocument(file, data, ps); n != nil {
		d := newYAMLDecoder(file, ps)
		lines = d.lines
		d.decode(n, reflect.ValueOf(&c).Elem(), "")
		for key, p := range map[string]string{"paths.domains": c.Paths.Domains, "paths.tools": c.Paths.Tools, "paths.intents": c.Paths.Intents} {
			if p != "" && !localPath(p) {
				ps.add(d.at(d.line(key)), "%s: %q must be a relative path inside the registry", key, p)
			}
		}
		if c.Paths.Tools != "" && !doublestar.ValidatePattern(c.Paths.Tools) {
			ps.add(d.at(d.line("paths.tools")), "paths.tools: %q is not a valid glob", c.Paths.Tools)
		}
		if m := c.Margins.AccuracyPoints; m < 0 || m >= 100 {
			ps.add(d.at(d.line("margins.accuracy_points")), "margins.accuracy_points: %v is not between 0 and 100 points", m)
			c.Margins.AccuracyPoints = 0
		}
		if m := c.Margins.SlowerPercent; m < 0 || m > 1000 {
			ps.add(d.at(d.line("margins.slower_percent")), "margins.slower_percent: %v is not between 0 and 1000 percent", m)
			c.Margins.SlowerPercent = 0
		}
		if c.Compare != "" && c.Compare != CompareBase && c.Compare != CompareBoth {
			ps.add(d.at(d.line("compare")), "compare: %q: want %s or %s", c.Compare, CompareBase, CompareBoth)
			c.Compare = ""
		}
		for _, l := range c.FailOnLabels() {
			if pairbench.Label(l).Rank() < 0 && l != gateWorse {
				ps.add(d.at(d.line("fail_on")), "fail_on: %q is not a label (want labels such as less accurate, slower, or worse)", l)
				c.FailOn = ""
				break
			}
		}
		for dom, globs := range c.Domains {
			for _, g := range globs {
				if !localPath(strings.TrimPrefix(g, "**/")) || !doublestar.ValidatePattern(g) {
					ps.add(d.at(d.line("domains."+dom)), "domains.%s: %q is not a valid glob inside the registry", dom, g)
				}
			}
		}
	}
	return withDefaults(c), lines
}

// emptyConfig reports whether a configuration file holds no YAML value: it
// is empty, or holds comments, blank lines or an empty document alone.
func emptyConfig(data []byte) bool {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return false
	}
	if len(doc.Content) == 0 {
		return true
	}
	n := doc.Content[0]
	return len(doc.Content) == 1 && n.Kind == yaml.ScalarNode && n.Tag == "!!null" && n.Value == ""
}

// withDefaults fills the paths c leaves out, or gives wrongly, with their
// defaults.
func withDefaults(c Config) Config {
	if c.Paths.Domains == "" || !localPath(c.Paths.Domains) {
		c.Paths.Domains = DefaultPaths.Domains
	}
	if c.Paths.Tools == "" || !localPath(c.Paths.Tools) || !doublestar.ValidatePattern(c.Paths.Tools) {
		c.Paths.Tools = DefaultPaths.Tools
	}
	if c.Paths.Intents == "" || !localPath(c.Paths.Intents) {
		c.Paths.Intents = DefaultPaths.Intents
	}
	return c
}

// localPath reports whether p is a clean relative slash path that stays
// inside the registry.
func localPath(p string) bool {
	return p != "" && !path.IsAbs(p) && !strings.Contains(p, "\\") && path.Clean(p) == p &&
		p != ".." && !strings.HasPrefix(p, "../")
}

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
