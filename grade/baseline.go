package grade

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/intents"
)

// CheckBaselines compiles each intent's grader and grades its baseline
// answer, resolved for a run starting at now, as an agent's fenced JSON
// block: a baseline that does not grade correct is a problem, named at the
// baseline's line. An intent whose known-correct answer fails its own rules
// cannot be benched: every trial would be graded against broken rules.
// A compile problem intents.Load already reported for the same file (the
// answer schema, at the intent's position) is left out.
func CheckBaselines(reg *intents.Registry, now time.Time) intents.Problems {
	var out intents.Problems
	for _, in := range reg.Intents {
		resolved, err := intents.Resolve(*in, now)
		if err != nil {
			continue // an undefined placeholder; Load reported it
		}
		g, err := Compile(&resolved)
		if err != nil {
			var ps intents.Problems
			if !errors.As(err, &ps) {
				out = append(out, intents.Problem{Pos: in.Pos, Msg: err.Error()})
				continue
			}
			for _, p := range ps {
				if p.Pos == in.Pos && reg.Flawed(in.File) {
					continue
				}
				out = append(out, p)
			}
			continue
		}
		if resolved.Baseline.Answer == nil {
			continue // Load reported the missing answer
		}
		b, err := json.MarshalIndent(resolved.Baseline.Answer, "", "  ")
		if err != nil {
			out = append(out, intents.Problem{Pos: in.Baseline.Pos, Msg: fmt.Sprintf("baseline answer is not JSON: %v", err)})
			continue
		}
		res := g.Grade("```json\n" + string(b) + "\n```")
		if res.Outcome != pairbench.Correct {
			out = append(out, intents.Problem{Pos: in.Baseline.Pos, Msg: fmt.Sprintf("baseline answer grades %s: %s", res.Outcome, res.Reason)})
		}
	}
	return out
}
