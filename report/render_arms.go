package report

import (
	"fmt"
	"html/template"
	"strings"
)

// armsIntentsShown is the most intents whose non-inferiority verdict the
// arms block lists one by one.
const armsIntentsShown = 10

// mdArms is the Markdown block of a run whose arms were configured: what
// each arm is, head against base's verdict at the margins and each
// intent's, how the tools differ per domain, and each tool's calls per arm;
// "" for a run of no tools against tools.
func mdArms(r *Report) string {
	a := r.Arms
	if a == nil {
		return ""
	}
	var b strings.Builder
	// Treatment against control: the reviewer's question.
	fmt.Fprintf(&b, "**Compared:** %s (treatment, %s) against %s (control, %s).\n\n",
		mdText(clipText(a.Treatment.Name, 200)), mdCode(a.Treatment.Spec, false), mdText(clipText(a.Control.Name, 200)), mdCode(a.Control.Spec, false))
	if r.NonInferiority != "" {
		fmt.Fprintf(&b, "**Head against base: %s**", mdText(string(r.NonInferiority)))
		for _, in := range r.Intents {
			if ni := in.NonInferiority; ni != nil {
				fmt.Fprintf(&b, " (margins: at most %g points less accurate, at most %g%% slower)", ni.Margins.AccuracyPoints, ni.Margins.SlowerPercent)
				break
			}
		}
		b.WriteString(".\n\n")
		n := 0
		for _, in := range r.Intents {
			ni := in.NonInferiority
			if ni == nil {
				continue
			}
			if n == armsIntentsShown {
				b.WriteString("- …\n")
				break
			}
			n++
			fmt.Fprintf(&b, "- %s: **%s**: %s\n", mdCode(clipText(in.ID, narrowIDLen), false), mdText(string(ni.Result)), mdText(clipText(ni.Why, 300)))
		}
		if n > 0 {
			b.WriteString("\n")
		}
	}
	var diffs []string
	for _, d := range a.Domains {
		var parts []string
		if d.AbsentInControl {
			parts = append(parts, "new: not in the control's registry, so benched against no tools")
		}
		if d.AgainstNone {
			parts = append(parts, "its intents alone changed, so benched against no tools")
		}
		for _, p := range []struct {
			what  string
			names []string
		}{{"added", d.Added}, {"removed", d.Removed}, {"edited", d.Edited}} {
			if len(p.names) > 0 {
				parts = append(parts, p.what+" "+mdCodeList(p.names))
			}
		}
		if len(parts) == 0 && a.Control.Tools && a.Treatment.Tools {
			parts = append(parts, "tools unchanged")
		}
		if len(parts) > 0 {
			diffs = append(diffs, fmt.Sprintf("- %s: %s\n", mdCode(d.Domain, false), strings.Join(parts, "; ")))
		}
	}
	if len(diffs) > 0 {
		b.WriteString("Tools, treatment against control:\n\n" + strings.Join(diffs, "") + "\n")
	}
	var calls []string
	for _, t := range r.Tools {
		if t.PerArm == nil || !t.Registered {
			continue
		}
		calls = append(calls, fmt.Sprintf("| %s | %s | %d | %d | %d | %d |\n", mdCode(t.Domain, true), mdCode(t.Tool, true),
			t.PerArm.Control.Calls, t.PerArm.Control.Failures, t.PerArm.Treatment.Calls, t.PerArm.Treatment.Failures))
	}
	if len(calls) > 0 {
		b.WriteString("| domain | tool | control calls | control failures | treatment calls | treatment failures |\n|---|---|--:|--:|--:|--:|\n")
		b.WriteString(strings.Join(calls, "") + "\n")
	}
	return b.String()
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
	if r.Arms == nil {
		return "", nil
	}
	data := struct {
		Arms    *Arms
		Result  NIResult
		Margins *Margins
		Intents []Intent
		Tools   []ToolFailures
	}{Arms: r.Arms, Result: r.NonInferiority}
	for _, in := range r.Intents {
		if in.NonInferiority != nil {
			data.Intents = append(data.Intents, in)
			data.Margins = &in.NonInferiority.Margins
		}
	}
	for _, t := range r.Tools {
		if t.PerArm != nil && t.Registered {
			data.Tools = append(data.Tools, t)
		}
	}
	var b strings.Builder
	if err := armsHTMLTemplate.Execute(&b, data); err != nil {
		return "", fmt.Errorf("write the arms section: %w", err)
	}
	return template.HTML(b.String()), nil //nolint:gosec // produced by html/template
}
