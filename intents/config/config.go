// Package config reads what a registry says of itself without running any
// of it: its configuration file (.pairbench.yml), which domains a change
// concerns and how each is compared, an intent file's id, and the problems
// found, each at file:line, with the strict YAML decoder the registry's
// loader (package intents) uses too. It links no JavaScript interpreter, so
// the service's bot can read pull requests with it.
package config

import (
	"path"
	"reflect"
	"regexp"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
	"gopkg.in/yaml.v3"

	"github.com/pairbench/pairbench"
)

// File is the registry's optional configuration file, at its root.
const File = ".pairbench.yml"

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

// Parse reads a registry's .pairbench.yml from data, as intents.Load does;
// name is the file's name in positions. It returns the configuration with
// the defaults in place of what is missing or invalid, so a caller can
// still find its way in the registry, and, when anything is wrong (an
// unknown key, a path outside the registry, a bad glob, bad YAML), a
// Problems error naming each by file and line.
func Parse(name string, data []byte) (Config, error) {
	var ps Problems
	c, _ := Read(name, data, &ps)
	if len(ps) > 0 {
		ps.Sort()
		return c, ps
	}
	return c, nil
}

// ValidDomainName reports whether name may name a domain: a lower-case host
// name, as a registry's domain directories are called.
func ValidDomainName(name string) bool { return domainName.MatchString(name) }

// domainName is what a domain directory may be called.
var domainName = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$`)

// Read reads .pairbench.yml, reporting problems in ps; missing paths take
// their defaults. It also returns the line of each key.
func Read(file string, data []byte, ps *Problems) (Config, map[string]int) {
	var c Config
	lines := map[string]int{}
	// An empty file, or one of comments alone, takes every default.
	if emptyConfig(data) {
		return withDefaults(c), lines
	}
	if n := ParseDocument(file, data, ps); n != nil {
		d := NewDecoder(file, ps)
		lines = d.Lines
		d.Decode(n, reflect.ValueOf(&c).Elem(), "")
		for key, p := range map[string]string{"paths.domains": c.Paths.Domains, "paths.tools": c.Paths.Tools, "paths.intents": c.Paths.Intents} {
			if p != "" && !LocalPath(p) {
				ps.Add(d.At(d.Line(key)), "%s: %q must be a relative path inside the registry", key, p)
			}
		}
		if c.Paths.Tools != "" && !doublestar.ValidatePattern(c.Paths.Tools) {
			ps.Add(d.At(d.Line("paths.tools")), "paths.tools: %q is not a valid glob", c.Paths.Tools)
		}
		if m := c.Margins.AccuracyPoints; m < 0 || m >= 100 {
			ps.Add(d.At(d.Line("margins.accuracy_points")), "margins.accuracy_points: %v is not between 0 and 100 points", m)
			c.Margins.AccuracyPoints = 0
		}
		if m := c.Margins.SlowerPercent; m < 0 || m > 1000 {
			ps.Add(d.At(d.Line("margins.slower_percent")), "margins.slower_percent: %v is not between 0 and 1000 percent", m)
			c.Margins.SlowerPercent = 0
		}
		if c.Compare != "" && c.Compare != CompareBase && c.Compare != CompareBoth {
			ps.Add(d.At(d.Line("compare")), "compare: %q: want %s or %s", c.Compare, CompareBase, CompareBoth)
			c.Compare = ""
		}
		for _, l := range c.FailOnLabels() {
			if pairbench.Label(l).Rank() < 0 && l != gateWorse {
				ps.Add(d.At(d.Line("fail_on")), "fail_on: %q is not a label (want labels such as less accurate, slower, or worse)", l)
				c.FailOn = ""
				break
			}
		}
		for dom, globs := range c.Domains {
			for _, g := range globs {
				if !LocalPath(strings.TrimPrefix(g, "**/")) || !doublestar.ValidatePattern(g) {
					ps.Add(d.At(d.Line("domains."+dom)), "domains.%s: %q is not a valid glob inside the registry", dom, g)
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
	if c.Paths.Domains == "" || !LocalPath(c.Paths.Domains) {
		c.Paths.Domains = DefaultPaths.Domains
	}
	if c.Paths.Tools == "" || !LocalPath(c.Paths.Tools) || !doublestar.ValidatePattern(c.Paths.Tools) {
		c.Paths.Tools = DefaultPaths.Tools
	}
	if c.Paths.Intents == "" || !LocalPath(c.Paths.Intents) {
		c.Paths.Intents = DefaultPaths.Intents
	}
	return c
}

// LocalPath reports whether p is a clean relative slash path that stays
// inside the registry.
func LocalPath(p string) bool {
	return p != "" && !path.IsAbs(p) && !strings.Contains(p, "\\") && path.Clean(p) == p &&
		p != ".." && !strings.HasPrefix(p, "../")
}

// IntentID reads the id of the intent file data, named name, with the
// registry loader's own decoder: a file with problems elsewhere still has
// its id; one that is no YAML mapping, or has no id, has "". The bot plans
// with it, reading a pull request's intent files one by one; the runner
// loads them whole (intents.Load).
func IntentID(name string, data []byte) string {
	var ps Problems
	n := ParseDocument(name, data, &ps)
	if n == nil || n.Kind != yaml.MappingNode {
		return ""
	}
	var in struct {
		ID string `yaml:"id"`
	}
	NewDecoder(name, &ps).Decode(n, reflect.ValueOf(&in).Elem(), "")
	return in.ID
}
