package rundir

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// Changes lists how q differs from p in what a resume must keep: the
// intents and their tools, fixtures, pairs and files (their content
// hashes), the model, caps, allowlist, component versions, the trial
// settings, the seed and alpha. An empty list means q can resume p's run.
func (p *Plan) Changes(q *Plan) []string {
	var out []string
	diff := func(what string, a, b any) {
		if fmt.Sprint(a) != fmt.Sprint(b) {
			out = append(out, fmt.Sprintf("%s: %v → %v", what, a, b))
		}
	}
	if p.AgentName() != q.AgentName() {
		out = append(out, fmt.Sprintf("agent: %s → %s (a run is benched with one agent)", p.AgentName(), q.AgentName()))
	}
	diff("model", p.Model.String(), q.Model.String())
	diff("caps", p.Caps, q.Caps)
	diff("allowlist", strings.Join(p.Allowlist, ","), strings.Join(q.Allowlist, ","))
	pv, qv := p.Versions, q.Versions
	pv.AgentName, qv.AgentName = p.AgentName(), q.AgentName() // told above
	diff("versions", pv, qv)
	diff("prices", p.Prices, q.Prices)
	diff("registry commit", p.Source.Commit, q.Source.Commit)
	policy := func(b *BrowserPolicy) string {
		j, _ := json.Marshal(b)
		return string(j)
	}
	diff("browser policy", policy(p.Browser), policy(q.Browser))
	diff("webmcp", p.WebMCPMode(), q.WebMCPMode())
	diff("seed", p.Seed, q.Seed)
	diff("alpha", p.Alpha, q.Alpha)
	diff("judge", p.Judge, q.Judge)
	if p.Trial != nil && q.Trial != nil {
		diff("start delay", time.Duration(p.Trial.StartDelayMS)*time.Millisecond, time.Duration(q.Trial.StartDelayMS)*time.Millisecond)
		diff("settle", time.Duration(p.Trial.SettleMS)*time.Millisecond, time.Duration(q.Trial.SettleMS)*time.Millisecond)
		diff("adoption trials", p.Trial.Adoption, q.Trial.Adoption)
		diff("pair attempts", p.Trial.PairAttempts, q.Trial.PairAttempts)
	}
	ids := func(pl *Plan) []string {
		var s []string
		for _, in := range pl.Intents {
			s = append(s, in.ID)
		}
		return s
	}
	diff("intents", ids(p), ids(q))
	out = append(out, armChanges(p, q)...)
	for _, a := range p.Intents {
		for _, b := range q.Intents {
			if a.ID != b.ID {
				continue
			}
			diff(a.ID+" tools", a.Tools, b.Tools)
			diff(a.ID+" fixtures", a.Fixtures, b.Fixtures)
			diff(a.ID+" pairs", len(a.Pairs), len(b.Pairs))
			if a.Files != nil { // a run.json from before files were frozen has none
				out = append(out, fileChanges(a.ID, a.Files, b.Files)...)
			}
		}
	}
	return out
}

// AgentName names the run's agent: Versions.AgentName, or pi for a
// run.json written before runs named their agent (pi was the only one).
func (p *Plan) AgentName() string {
	if p.Versions.AgentName == "" {
		return "pi"
	}
	return p.Versions.AgentName
}

// fileChanges names the files of intent id whose content differs between
// the content hashes a and b, in path order.
func fileChanges(id string, a, b map[string]string) []string {
	var out []string
	for _, f := range slices.Sorted(maps.Keys(a)) {
		switch h, ok := b[f]; {
		case !ok:
			out = append(out, fmt.Sprintf("%s: %s is gone", id, f))
		case h != a[f]:
			out = append(out, fmt.Sprintf("%s: %s changed", id, f))
		}
	}
	for _, f := range slices.Sorted(maps.Keys(b)) {
		if _, ok := a[f]; !ok {
			out = append(out, fmt.Sprintf("%s: %s is new", id, f))
		}
	}
	return out
}
