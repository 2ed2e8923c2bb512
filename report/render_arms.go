package report

import (
	"fmt"
	"html/template"
	"strings"
)

// armsIntentsShown is the most intents whose non-inferiority verdict the
// Markdown arms block lists one by one.
const armsIntentsShown = 10

// armsData is what the renderings show of a run whose arms were
// configured: the arms, head against base's verdict at its margins, the
// intents with a verdict of their own (in the report's order), and the
// registered tools counted per arm.
type armsData struct {
	Arms    *Arms
	Result  NIResult
	Margins *Margins
	Intents []Intent
	Tools   []ToolFailures
}

// newArmsData is r's arms; nil for a run of no tools against tools.
func newArmsData(r *Report) *armsData {
	if r.Arms == nil {
		return nil
	}
	d := &armsData{Arms: r.Arms, Result: r.NonInferiority}
	for _, in := range r.Intents {
		if in.NonInferiority != nil {
			d.Intents = append(d.Intents, in)
			if d.Margins == nil {
				d.Margins = &in.NonInferiority.Margins
			}
		}
	}
	for _, t := range r.Tools {
		if t.PerArm != nil && t.Registered {
			d.Tools = append(d.Tools, t)
		}
	}
	return d
}

// mdArmsView is the Markdown's arms block (templates/report.md.tmpl's
// "arms"): at most armsIntentsShown intents, and how the tools differ per
// domain.
type mdArmsView struct {
	armsData
	// MoreIntents is set when intents past the first armsIntentsShown
	// were left out.
	MoreIntents bool
	// Domains are the domains with something to say of their tools.
	Domains []domainDiff
}

// domainDiff is what differs in one domain's tools, in parts.
type domainDiff struct {
	Domain string
	Parts  []diffPart
}

// diffPart is one thing said of a domain's tools: a phrase, and the tools
// it names.
type diffPart struct {
	What  string
	Names []string
}

// newMdArmsView is r's arms block; nil for a run of no tools against
// tools.
func newMdArmsView(r *Report) *mdArmsView {
	d := newArmsData(r)
	if d == nil {
		return nil
	}
	v := &mdArmsView{armsData: *d}
	if r.NonInferiority == "" {
		v.Intents = nil
	}
	if len(v.Intents) > armsIntentsShown {
		v.Intents, v.MoreIntents = v.Intents[:armsIntentsShown], true
	}
	a := r.Arms
	for _, dom := range a.Domains {
		var parts []diffPart
		if dom.AbsentInControl {
			parts = append(parts, diffPart{What: "new: not in the control's registry, so benched against no tools"})
		}
		if dom.AgainstNone {
			parts = append(parts, diffPart{What: "its intents alone changed, so benched against no tools"})
		}
		for _, p := range []diffPart{{"added", dom.Added}, {"removed", dom.Removed}, {"edited", dom.Edited}} {
			if len(p.Names) > 0 {
				parts = append(parts, p)
			}
		}
		if len(parts) == 0 && a.Control.Tools && a.Treatment.Tools {
			parts = append(parts, diffPart{What: "tools unchanged"})
		}
		if len(parts) > 0 {
			v.Domains = append(v.Domains, domainDiff{Domain: dom.Domain, Parts: parts})
		}
	}
	return v
}

func mdCodeList(names []string) string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = mdCode(n, false)
	}
	return strings.Join(out, ", ")
}

// armsHTMLTemplate is the run page's arms section: the HTML form of mdArms.
var armsHTMLTemplate = template.Must(template.New("arms.html.tmpl").ParseFS(Templates, "arms.html.tmpl"))

// htmlArms renders r's arms section for the run page; "" without arms.
func htmlArms(r *Report) (template.HTML, error) {
	data := newArmsData(r)
	if data == nil {
		return "", nil
	}
	var b strings.Builder
	if err := armsHTMLTemplate.Execute(&b, data); err != nil {
		return "", fmt.Errorf("write the arms section: %w", err)
	}
	return template.HTML(b.String()), nil //nolint:gosec // produced by html/template
}
