package toolcheck

import (
	"fmt"
	"net/url"
	"slices"

	"github.com/pairbench/pairbench/intents"
	"github.com/pairbench/pairbench/runner"
)

// ForPlan returns the sets that check a plan's treatment setups: each
// domain's registered tools, on each intent's start URL, with its entry
// tool. Domains share a browser unless their tools could meet on a page.
func ForPlan(tis []*runner.TrialIntent) []Set {
	var sets []Set
	for _, ti := range tis {
		in := ti.Intent
		i := slices.IndexFunc(sets, func(s Set) bool { return s.Domains[0] == in.Domain && s.Browser == ti.Browser })
		if i < 0 {
			sets = append(sets, Set{Browser: ti.Browser, Domains: []string{in.Domain}})
			i = len(sets) - 1
		}
		s := &sets[i]
		for _, t := range ti.Tools {
			if !slices.ContainsFunc(s.Tools, func(u intents.Tool) bool { return u.Name == t.Name }) {
				s.Tools = append(s.Tools, t)
			}
		}
		page := Page{URL: in.StartURL, Entry: in.EntryTool, For: "intent " + in.ID, Pos: in.Pos}
		if !slices.ContainsFunc(s.Pages, func(p Page) bool { return p.URL == page.URL && p.Entry == page.Entry }) {
			s.Pages = append(s.Pages, page)
		}
	}
	return merge(sets)
}

// ForRegistry returns the sets that check every tool file of reg in a
// browser: each intent's entry tool on its start URL, and each tool on an
// example URL of each of its patterns (see intents.URLPattern.Example). Every tool file counts, registered in runs or not. A pattern with no
// example URL is a Problem.
func ForRegistry(reg *intents.Registry) ([]Set, []Problem) {
	var sets []Set
	var problems []Problem
	for _, d := range reg.Domains {
		s := Set{Domains: []string{d.Name}, Tools: d.Tools}
		// Intents' start pages first: a problem there is what a trial
		// would meet.
		for _, in := range reg.Intents {
			if in.Domain == d.Name {
				s.Pages = addPage(s.Pages, Page{URL: in.StartURL, Entry: in.EntryTool, For: "intent " + in.ID, Pos: in.Pos})
			}
		}
		for i := range d.Tools {
			t := &d.Tools[i]
			for _, raw := range t.URLPatterns {
				p, err := intents.ParseURLPattern(raw)
				if err == nil {
					var example string
					if example, err = p.Example(); err == nil {
						s.Pages = addPage(s.Pages, Page{URL: example, For: fmt.Sprintf("%s's pattern %s", t.Name, raw), Pos: t.Pos})
						continue
					}
				}
				problems = append(problems, Problem{Page: Page{For: fmt.Sprintf("%s's pattern %s", t.Name, raw), Pos: t.Pos}, Tool: t,
					Msg: "cannot be checked: " + err.Error()})
			}
		}
		sets = append(sets, s)
	}
	return merge(sets), problems
}

// addPage adds p unless a page with its URL and entry tool is there.
func addPage(pages []Page, p Page) []Page {
	if slices.ContainsFunc(pages, func(q Page) bool { return q.URL == p.URL && q.Entry == p.Entry }) {
		return pages
	}
	return append(pages, p)
}

// merge puts sets into as few browsers as it can: two sets share one when
// they ask for the same browser, no tool name is in both, and no tool of one
// matches a page of the other, so that each page shows only its own
// domain's tools, as in a trial.
func merge(sets []Set) []Set {
	var out []Set
	for _, s := range sets {
		i := slices.IndexFunc(out, func(o Set) bool { return compatible(o, s) })
		if i < 0 {
			out = append(out, s)
			continue
		}
		out[i].Domains = append(out[i].Domains, s.Domains...)
		out[i].Tools = append(slices.Clip(out[i].Tools), s.Tools...)
		out[i].Pages = append(slices.Clip(out[i].Pages), s.Pages...)
	}
	return out
}

func compatible(a, b Set) bool {
	if a.Browser != b.Browser {
		return false
	}
	meets := func(x, y Set) bool {
		for i := range x.Tools {
			t := &x.Tools[i]
			if slices.ContainsFunc(y.Tools, func(u intents.Tool) bool { return u.Name == t.Name }) ||
				slices.ContainsFunc(y.Pages, func(p Page) bool { return t.Matches(p.URL) }) {
				return true
			}
		}
		return false
	}
	return !meets(a, b) && !meets(b, a)
}

// Hosts returns the host names the sets' pages are on, each once.
func Hosts(sets []Set) []string {
	var out []string
	for _, s := range sets {
		for _, p := range s.Pages {
			if h := hostname(p.URL); h != "" && !slices.Contains(out, h) {
				out = append(out, h)
			}
		}
	}
	slices.Sort(out)
	return out
}

func hostname(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return u.Hostname()
}
