package viewer

import (
	"fmt"
	"html/template"
)

// judgeSource is a judged trial's judgement on its pair page: the score
// against pass_at, each criterion's score, the judge's reasoning, and the
// second judging when the run judged twice.
const judgeSource = `{{define "judge"}}<h3>Judge</h3>
{{if .Scores}}<p>score <strong>{{score .Score}}</strong> (correct at {{score .PassAt}} or above)</p>
<table><tr><th>criterion</th><th>score</th></tr>
{{range .Scores}}<tr><td><code>{{.ID}}</code></td><td class="num">{{score .Score}}</td></tr>
{{end}}</table>
{{if .Reasoning}}<p class="meta">the judge's reasoning:</p><pre>{{.Reasoning}}</pre>{{end}}
{{with .Again}}<p class="meta">judged again (for the judge's agreement; the first judging decides): score {{score .Score}}{{if .Reasoning}}, reasoning:{{end}}</p>{{if .Reasoning}}<pre>{{.Reasoning}}</pre>{{end}}{{end}}
{{else}}<p class="note">The judge gave no verdict (its reply cost {{printf "$%.4f" .CostUSD}}).</p>{{end}}{{end}}`

var _ = template.Must(pages.Funcs(template.FuncMap{
	"score": func(s float64) string { return fmt.Sprintf("%.2f", s) },
}).New("judge").Parse(judgeSource))
