package viewer

import (
	"fmt"
	"html/template"
	"strings"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/report"
)

// Style is the style sheet of the site's intent and pair pages: the
// report's (report.HTMLStyle) and the site's own rules.
var Style = report.HTMLStyle + siteCSS + filterCSS()

// Policy is the Content-Security-Policy of the site's intent and pair
// pages: nothing runs, nothing loads from elsewhere, no form goes
// anywhere; the page's one inline style sheet (Style, by its hash) and
// images from the run's own files (the screenshots) are all it may use.
// Each page carries it; Handler sends it too, with report.html's.
var Policy = "default-src 'none'; style-src " + report.StyleSource(Style) + "; img-src 'self'; base-uri 'none'; form-action 'none'"

const siteCSS = `nav.crumbs { margin-bottom: .5rem; color: #57606a; }
nav.crumbs a { margin-right: .25rem; }
.side { display: flex; flex-wrap: wrap; gap: 1rem; align-items: flex-start; }
.side > .plot { flex: 0 0 420px; max-width: 100%; }
.side > .figures { flex: 1 1 24rem; min-width: 0; }
.pair { display: grid; grid-template-columns: minmax(0, 1fr) minmax(0, 1fr); gap: 1rem; }
.arm { min-width: 0; border: 1px solid #d0d7de; border-radius: 6px; padding: .25rem .75rem .75rem; }
.arm h2 { margin-top: .5rem; }
.arm img { width: 100%; height: auto; border: 1px solid #d0d7de; }
.arm table { width: 100%; }
.arm td.num { white-space: nowrap; }
.arm .tl-steps { font-size: 12px; }
.outcome { font-weight: 600; padding: 0 .4rem; border-radius: 1rem; white-space: nowrap; }
.o-correct { color: #116329; background: #dafbe1; }
.o-wrong, .o-malformed, .o-crashed, .o-timeout { color: #82071e; background: #ffebe9; }
.o-aborted, .o- { color: #57606a; background: #eaeef2; }
ol.steps { list-style: none; padding: 0; margin: .5rem 0; }
ol.steps li { border-left: 3px solid #d0d7de; padding: .1rem .5rem; margin: .35rem 0; }
ol.steps li.s-call { border-color: #0969da; }
ol.steps li.s-result { border-color: #8c959f; }
ol.steps li.s-result.err { border-color: #cf222e; }
ol.steps li.s-text { border-color: #1a7f37; }
ol.steps li.s-task { border-color: #bf8700; }
.meta { color: #57606a; font-size: 12px; }
.tl .ph-setup { fill: #afb8c1; }
.tl .ph-delay { fill: #eaeef2; }
.tl .ph-agent { fill: #54aeff; }
.tl .ph-end { fill: #d0d7de; }
.tl .line { stroke: #1f2328; }
.tl .call { fill: #1a7f37; }
.tl .call.err { fill: #cf222e; }
svg .c-both { stroke: #0969da; }
svg .c-treatment-only { stroke: #1a7f37; stroke-width: 2.5; }
svg .c-control-only { stroke: #cf222e; stroke-width: 2.5; }
svg .c-neither { stroke: #8c959f; stroke-dasharray: 3 3; }
svg .axis { stroke: #57606a; }
.swatch { display: inline-block; width: 1.5rem; height: 0; border-top: 3px solid; vertical-align: middle; margin-right: .25rem; }
.k-both { border-color: #0969da; }
.k-treatment-only { border-color: #1a7f37; }
.k-control-only { border-color: #cf222e; }
.k-neither { border-color: #8c959f; border-top-style: dashed; }
.k-incomplete { border-color: #eaeef2; }
@media (max-width: 700px) { .pair { grid-template-columns: minmax(0, 1fr); } }
`

// webMCPNames say whose WebMCP a trial's start page had, by the row's
// webmcp_impl (valid rows have no other).
var webMCPNames = map[pairbench.WebMCPImpl]string{
	pairbench.WebMCPNative:   "the browser's own (native)",
	pairbench.WebMCPPolyfill: "pairbench's polyfill (the browser has none)",
	"":                       "not recorded",
}

// filterCSS hides the pairs the intent page's filters leave out. It is
// fixed (one rule per class there is), so the style sheet's hash is too.
func filterCSS() string {
	var b strings.Builder
	for _, c := range pairClasses {
		fmt.Fprintf(&b, "body:has(#pc-%[1]s:checked) .p-row:not(.pc-%[1]s) { display: none; }\n", c.Class)
	}
	b.WriteString("body:has(#pd:checked) .p-row:not(.pd) { display: none; }\n")
	return b.String()
}

var pages = template.Must(template.New("site").Funcs(template.FuncMap{
	"outcomeClass": func(o pairbench.Outcome) string { return "o-" + string(o) },
	"millis":       millis,
	"seconds":      seconds,
	"join":         strings.Join,
	"webmcp":       func(w pairbench.WebMCPImpl) string { return webMCPNames[w] },
	"caps": func(cs []pairbench.Cap) string {
		s := make([]string, len(cs))
		for i, c := range cs {
			s[i] = string(c)
		}
		return strings.Join(s, ", ")
	},
	"at": func(ms int64) string {
		if ms < 0 {
			return ""
		}
		return fmt.Sprintf("%.1f s", float64(ms)/1000)
	},
}).Parse(pagesSource))

const pagesSource = `{{define "head"}}<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{{.Policy}}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>{{.Title}} · pairbench {{.Run}}</title>
<style>{{.Style}}</style>
</head>
<body>
{{end}}

{{define "intent"}}{{template "head" .Head}}<nav class="crumbs"><a href="{{.Root}}/report.html">run {{.Run}}</a> › intent</nav>
<h1><code>{{.ID}}</code> · <span class="label {{.LabelClass}}">{{.Label}}</span></h1>
<p>{{if .Domain}}Domain <code>{{.Domain}}</code> · {{end}}{{len .Pairs}} of {{.Planned}} planned pairs have rows{{if .Missing}} ({{.Missing}} missing){{end}}.</p>{{if .Treatment}}
<p>Compared: treatment had {{.Treatment}}; control had {{.Control}}.</p>{{end}}
<div class="side">
<div class="plot">{{.Plot}}</div>
<div class="figures">{{.Figures}}</div>
</div>
<h2>Pairs</h2>
{{if .Pairs}}<form class="filters" aria-label="Filters">
<fieldset><legend>Pairs</legend><input type="radio" name="pc" id="pc-all" checked><label for="pc-all">all ({{len .Pairs}})</label>{{range .Classes}}<input type="radio" name="pc" id="pc-{{.Class}}"><label for="pc-{{.Class}}"><span class="swatch k-{{.Class}}"></span>{{.Name}} ({{.N}})</label>{{end}}</fieldset>
<fieldset><input type="checkbox" id="pd"><label for="pd">where the arms disagree ({{.Disagree}})</label></fieldset>
</form>
<table class="summary">
<tr><th>pair</th><th>order</th><th>control{{if .Control}}: {{.Control}}{{end}}</th><th>treatment{{if .Treatment}}: {{.Treatment}}{{end}}</th><th>arms</th></tr>
{{.PairRows}}</table>
{{if not .Linked}}<p class="note">This run directory has no trial directories, so its pairs have no pages: run the bench with its trials kept (or fetch them with merge --trials) to step through them.</p>{{end}}
{{else}}<p>No pair of this intent has a row yet.</p>{{end}}
</body>
</html>
{{end}}

{{define "pair"}}{{template "head" .Head}}<nav class="crumbs"><a href="{{.Root}}/report.html">run {{.Run}}</a> › <a href="{{.IntentPage}}">intent <code>{{.Intent}}</code></a> › pair {{.Pair}}{{if .Prev}} · <a href="{{.Prev}}">← previous pair</a>{{end}}{{if .Next}} · <a href="{{.Next}}">next pair →</a>{{end}}</nav>
<h1><code>{{.Intent}}</code> · pair {{.Pair}} <span class="swatch k-{{.Class}}"></span><small>{{.ClassName}}</small></h1>
<p>Intent label <span class="label {{.LabelClass}}">{{.Label}}</span> · {{.Order}} · both arms ran the same agent, model, prompt and browser; {{if .Compared}}{{.Compared}}{{else}}treatment had the site's WebMCP tools registered{{end}}.</p>
<div class="pair">{{range .Arms}}{{template "arm" .}}{{end}}</div>
</body>
</html>
{{end}}

{{define "arm"}}<section class="arm">
<h2>{{.Arm}}{{with .Row}} · <span class="outcome {{outcomeClass .Outcome}}">{{.Outcome}}</span>{{end}}</h2>
{{if .Missing}}<p>No row with a trial directory for this arm.</p>{{else}}{{with .Row}}
<dl>
{{if .Reason}}<dt>grade</dt><dd>{{.Reason}}</dd>{{end}}
{{if .Error}}<dt>error</dt><dd>{{.Error}}</dd>{{end}}
<dt>wall time</dt><dd>{{seconds .WallSeconds}} (start delay {{millis .StartDelayMS}})</dd>
<dt>turns</dt><dd>{{.Turns}}</dd>
<dt>tokens</dt><dd>{{.InputTokens}} in · {{.OutputTokens}} out · {{$.Cost}}</dd>
{{if .CapsHit}}<dt>caps hit</dt><dd>{{caps .CapsHit}}</dd>{{end}}
<dt>registered tool used</dt><dd>{{if .Adopted}}yes{{else}}no{{end}}</dd>
<dt>WebMCP</dt><dd>{{webmcp .WebMCPImpl}}</dd>
{{if .Unregistered}}<dt>did not register</dt><dd>{{range .Unregistered}}{{.}}<br>{{end}}</dd>{{end}}
<dt>attempt</dt><dd>{{.Attempt}}{{if .StartedAt}} · started {{.StartedAt}}{{end}}</dd>
</dl>
<h3>Answer</h3>
{{if .Answer.Raw}}<pre>{{.Answer.Raw}}</pre>{{else}}<p class="note">No final answer.</p>{{end}}
{{with .Judge}}{{template "judge" .}}{{end}}{{end}}{{if .Extracted}}<p class="meta">extracted and graded:</p><pre>{{.Extracted}}</pre>{{end}}
{{if .Earlier}}<details><summary>{{len .Earlier}} earlier {{if eq (len .Earlier) 1}}attempt{{else}}attempts{{end}}</summary><ul>{{range .Earlier}}<li>attempt {{.Attempt}}: <span class="outcome {{outcomeClass .Outcome}}">{{.Outcome}}</span>{{if .Error}} {{.Error}}{{end}}{{if .Reason}} {{.Reason}}{{end}}</li>{{end}}</ul></details>{{end}}
{{if .Problem}}<p class="warning">{{.Problem}}</p>{{end}}
<h3>Page at the end</h3>
{{if .Files.Screenshot}}<a href="{{$.Root}}/{{.Files.Screenshot}}"><img src="{{$.Root}}/{{.Files.Screenshot}}" width="1280" height="800" alt="the page at the end of the {{.Arm}} trial"></a>{{else}}<p class="note">No screenshot.</p>{{end}}
{{with .Timeline}}<h3>Timeline</h3>{{template "timeline" .}}{{end}}
{{with .Row}}{{if .WebMCP}}<h3>WebMCP invocations</h3>
<table><tr><th>tool</th><th>status</th><th>ms</th></tr>
{{range .WebMCP}}<tr><td><code>{{.Tool}}</code>{{if not .Registered}} <small>(the page's own)</small>{{end}}</td><td>{{.Status}}{{if .Error}}: {{.Error}}{{end}}</td><td class="num">{{.MS}}</td></tr>
{{end}}</table>{{end}}{{end}}
<h3>Transcript</h3>
{{if .Steps}}<ol class="steps">{{range .Steps}}<li class="s-{{.Kind}}{{if .Error}} err{{end}}"><div class="meta">{{at .AtMS}}{{if .Turn}} · turn {{.Turn}}{{end}} · {{if eq .Kind "call"}}call <code>{{.Tool}}</code>{{else if eq .Kind "result"}}result{{with .Tool}} of <code>{{.}}</code>{{end}}{{if .Error}} (error){{end}}{{else}}{{.Kind}}{{end}}</div><pre>{{.Text}}</pre>{{if .Trimmed}}<div class="meta">… {{.Trimmed}} more characters in the transcript file</div>{{end}}</li>{{end}}</ol>{{else}}<p class="note">No transcript steps.</p>{{end}}
<p class="meta">Files: {{with .Files}}{{if .Transcript}}<a href="{{$.Root}}/{{.Transcript}}">transcript.jsonl</a> {{end}}{{if .Timeline}}<a href="{{$.Root}}/{{.Timeline}}">timeline.json</a> {{end}}{{if .Setup}}<a href="{{$.Root}}/{{.Setup}}">setup.json</a> {{end}}{{if .WebMCP}}<a href="{{$.Root}}/{{.WebMCP}}">webmcp.jsonl</a>{{end}}{{end}}</p>
{{end}}</section>
{{end}}

{{define "timeline"}}<svg class="tl" role="img" aria-label="timeline" width="{{.Width}}" height="40" viewBox="0 0 {{.Width}} 40">
{{range .Phases}}<rect class="{{.Class}}" x="{{.X}}" y="14" width="{{.W}}" height="12"><title>{{.Title}}</title></rect>
{{end}}{{range .Lines}}<line class="line" x1="{{.}}" x2="{{.}}" y1="6" y2="12"/>
{{end}}{{range .Calls}}<rect class="call{{if .Error}} err{{end}}" x="{{.X}}" y="28" width="{{.W}}" height="8"><title>{{.Title}}</title></rect>
{{end}}</svg>
<p class="meta">grey: setup · pale: start delay · blue: agent · ticks above: transcript lines · boxes below: WebMCP invocations</p>
<table class="tl-steps"><tr><th>step</th><th>at</th><th>after the previous</th></tr>
{{range .Marks}}<tr><td>{{.Name}}</td><td class="num">{{.At}}</td><td class="num">{{.Gap}}</td></tr>
{{end}}</table>{{end}}
`
