package bench

import (
	"context"
	"fmt"
	"os"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/intents"
	"github.com/pairbench/pairbench/rundir"
)

// ValidateSite plays each intent of reg (the registry cfg.Registry holds,
// already validated) once against its site: a bench of one pair per intent
// with the scripted model, whose control takes the baseline's steps and
// whose treatment calls the entry tool with the baseline's tool_args, and
// each graded. An arm whose answer does not grade correct is a problem at
// the baseline's line: the baseline does not hold on the site as it is
// (a step that finds no element, a page that changed, a tool that fails).
// cfg says how to reach the site (Hosts, Origins, CACerts, ExampleSites)
// and where the Node tools are; its model, pairs and run directory are
// Validate's own, in a temporary directory removed after. The error is for
// a bench that could not run (its smoke gate, a start page that does not
// load).
func ValidateSite(ctx context.Context, cfg Config, reg *intents.Registry) (intents.Problems, error) {
	tmp, err := os.MkdirTemp(cfg.TempDir, "pairbench-validate-site-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	cfg.RunsDir, cfg.RunID, cfg.Store, cfg.Shard, cfg.Shards = tmp, "validate-site", "", 0, 0
	cfg.Model, cfg.ModelURL, cfg.Pairs, cfg.Adoption, cfg.PlanOnly = ScriptedModel, "", 1, 0, false
	if err := cfg.Complete(); err != nil {
		return nil, err
	}
	res, err := Bench(ctx, cfg)
	if err != nil {
		return nil, err
	}
	var rows []pairbench.Row
	if _, err := res.Dir.ScanRows(rundir.RowQuery{RunID: cfg.RunID}, func(r *pairbench.Row) { rows = append(rows, *r) }); err != nil {
		return nil, err
	}
	last := map[string]map[pairbench.Arm]pairbench.Row{}
	for _, r := range rows {
		if r.Stage != pairbench.StagePair {
			continue
		}
		if last[r.Intent] == nil {
			last[r.Intent] = map[pairbench.Arm]pairbench.Row{}
		}
		if prev, ok := last[r.Intent][r.Arm]; !ok || r.Attempt >= prev.Attempt {
			last[r.Intent][r.Arm] = r
		}
	}
	var out intents.Problems
	for _, in := range reg.Intents {
		arms, ran := last[in.ID]
		if !ran {
			continue // not selected, or stale
		}
		for _, c := range []struct {
			arm  pairbench.Arm
			what string
			pos  intents.Pos
		}{
			{pairbench.Control, "baseline steps", stepsPos(in)},
			{pairbench.Treatment, "baseline tool_args (entry_tool " + in.EntryTool + ")", in.Baseline.Pos},
		} {
			r, ok := arms[c.arm]
			switch {
			case !ok:
				out = append(out, intents.Problem{Pos: c.pos, Msg: fmt.Sprintf("%s against the site: the %s trial did not run", c.what, c.arm)})
			case r.Outcome != pairbench.Correct:
				out = append(out, intents.Problem{Pos: c.pos, Msg: fmt.Sprintf("%s against the site: the scripted %s answer grades %s: %s",
					c.what, c.arm, r.Outcome, r.Reason)})
			}
		}
	}
	return out, nil
}

// stepsPos is where an intent's baseline steps begin.
func stepsPos(in *intents.Intent) intents.Pos {
	if len(in.Baseline.Steps) > 0 {
		return in.Baseline.Steps[0].Pos
	}
	return in.Baseline.Pos
}
