package bench

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"

	"github.com/pairbench/pairbench/rundir"

	"github.com/pairbench/pairbench"
	"github.com/pairbench/pairbench/intents"
	"github.com/pairbench/pairbench/runner"
)

// readRevs reads the registry at every revision the run's arms read tools
// at (rundir.PlanArms.Revs), in memory, never checked out: from the
// registry directory's own git repository, or through the git cache when
// the registry is read from git (Config.Git). A resumed run reads each at
// the commit its plan froze, so the trials register what was planned. It
// returns the registries by revision and arms with each rev arm's commit.
func (r *Run) readRevs(ctx context.Context, arms rundir.PlanArms) (map[string]*intents.Registry, rundir.PlanArms, error) {
	revs := arms.Revs()
	if len(revs) == 0 {
		return nil, arms, nil
	}
	frozen := map[string]string{} // rev -> commit, of a stored plan
	if stored, err := r.dir.ReadPlan(); err == nil {
		for _, arm := range pairbench.Arms {
			if s := stored.ArmSpecs().Of(arm); s.Tools == rundir.RevTools && s.Commit != "" {
				frozen[s.Rev] = s.Commit
			}
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, arms, err
	}
	out := map[string]*intents.Registry{}
	commits := map[string]string{}
	for _, rev := range revs {
		at := rev
		if c := frozen[rev]; c != "" {
			at = c
		}
		var commit string
		var tree fs.FS
		var err error
		if g := r.cfg.Git; g != nil {
			var src rundir.Source
			src, tree, err = runner.GitFetch(ctx, g.Cache, g.Repo, at, 0, r.cfg.Registry)
			commit = src.Commit
		} else {
			commit, tree, err = runner.GitTreeAt(ctx, r.cfg.Registry, at)
		}
		if err != nil {
			return nil, arms, fmt.Errorf("tools@%s: %w", rev, err)
		}
		reg, err := intents.LoadFS(tree, r.cfg.Registry+"@"+rev)
		var ps intents.Problems
		switch {
		case reg == nil:
			return nil, arms, fmt.Errorf("tools@%s: %w", rev, err)
		case errors.As(err, &ps):
			// The base's own problems are not the head's: its tools are
			// registered as they loaded, and the log says what was wrong.
			r.problem(rundir.Problem{Msg: "the registry at an arm's revision has problems", Attrs: []any{"rev", rev, "commit", commit, "problems", ps.Error()}})
		case err != nil:
			return nil, arms, fmt.Errorf("tools@%s: %w", rev, err)
		}
		r.log.Info("arm registry", "rev", rev, "commit", commit)
		out[rev], commits[rev] = reg, commit
	}
	for _, s := range []*rundir.ArmSpec{&arms.Control, &arms.Treatment} {
		if s.Tools == rundir.RevTools {
			s.Commit = commits[s.Rev]
		}
	}
	return out, arms, nil
}

// cmpArms returns arms, or rundir.DefaultArms for the zero value.
func cmpArms(arms rundir.PlanArms) rundir.PlanArms {
	if arms == (rundir.PlanArms{}) {
		return rundir.DefaultArms
	}
	return arms
}

// armView returns the intents whose arm registers tools, each as the
// smoke gate's tool check sees it: the arm's tools in Tools, and the entry
// tool only when the arm has it (a tools@REV control may predate it).
func armView(tis []*runner.TrialIntent, arm pairbench.Arm) []*runner.TrialIntent {
	var out []*runner.TrialIntent
	for _, ti := range tis {
		tools := ti.ArmTools(arm)
		if len(tools) == 0 {
			continue
		}
		v := *ti
		v.Tools = tools
		if arm == pairbench.Control && !slices.ContainsFunc(tools, func(t intents.Tool) bool { return t.Name == ti.Intent.EntryTool }) {
			v.Intent.EntryTool = ""
		}
		out = append(out, &v)
	}
	return out
}
