package service

import (
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/pairbench/pairbench/bench"
	"github.com/pairbench/pairbench/bot"
	"github.com/pairbench/pairbench/report"
	"github.com/pairbench/pairbench/rundir"
)

func TestALocalBenchIsTheTemplateAtTheRequestedCommit(t *testing.T) {
	o := validOptions(t)
	o.Store, o.GitURL, o.Pairs, o.Model = "s3://bucket/runs", "https://git.example/{owner}/{repo}.git", 4, "openai/gpt-5.4-mini"
	o.LocalBench = bench.Config{Agent: "pi", Pairs: 10, Slots: 2, Model: bench.ScriptedModel, RunsDir: "/var/runs", Seed: 99}
	r := NewLocalRunner(o, slog.New(slog.DiscardHandler))

	req := bot.Request{RunID: "pr-7-abc", Repo: bot.Repo{Owner: "octo", Name: "registry"}, PR: 7, HeadSHA: "abc123",
		Domains: []string{"books.example", "weather.example"}}
	var seen []rundir.Progress
	c := r.config(req, func(p rundir.Progress) { seen = append(seen, p) })
	assert.Equal(t, "pr-7-abc", c.RunID, "the run id is the bench's, so a rerun resumes it")
	assert.Zero(t, c.Seed, "a new run draws its seed")
	assert.Equal(t, &bench.Git{Repo: "https://git.example/octo/registry.git", Ref: "abc123", PR: 7, Cache: filepath.Join("/var/runs", ".git-cache")}, c.Git)
	assert.Equal(t, []string{"books.example", "weather.example"}, c.Intents, "no intents asked: every intent of the domains")
	assert.Empty(t, c.Changes, "a bench without a base (recorded before bases were) is against no tools")
	assert.Equal(t, "s3://bucket/runs", c.Store)
	assert.Equal(t, 4, c.Pairs, "--pairs over the template")
	assert.Equal(t, "openai/gpt-5.4-mini", c.Model, "--model over the template")
	assert.Equal(t, "pi", c.Agent)

	start := rundir.Progress{Done: 0, Pairs: 24, Planned: 24}
	look1 := rundir.Progress{Done: 0, Pairs: 8, Planned: 24, Look: 1, Looks: 3}
	some := look1
	some.Done, some.Running = 3, 2
	done1 := look1
	done1.Done = 8
	look2 := rundir.Progress{Done: 8, Pairs: 16, Planned: 24, Look: 2, Looks: 3}
	stopped := look2
	stopped.Done = 16
	stopped.Stop = &rundir.LookStop{Look: 2, Pairs: 8, Kind: report.StopFutility, Reason: "the pooled speed p 0.8 and accuracy p 1 are both above 0.3"}
	for _, p := range []rundir.Progress{start, look1, look1, some, done1, look2, look2, stopped, stopped} {
		c.Hooks.Progress(p)
	}
	assert.Equal(t, []rundir.Progress{start, look1, some, done1, look2, stopped}, seen,
		"progress is told when the count moves, of the pairs in force (the look's, then the next look's), the look, or the stop")

	req.Intents, req.Pairs, req.Model, req.Agent = []string{"books.example/find"}, 2, bench.ScriptedModel, "claude-code"
	c = r.config(req, func(rundir.Progress) {})
	assert.Equal(t, []string{"books.example/find"}, c.Intents)
	assert.Equal(t, 2, c.Pairs, "what the bench asks for wins")
	assert.True(t, c.PairsGiven, "a resume with more pairs (/bench more) tops the run up")
	assert.Equal(t, bench.ScriptedModel, c.Model)
	assert.Equal(t, "claude-code", c.Agent)
	req.Base = "0123456789abcdef0123456789abcdef01234567"
	c = r.config(req, func(rundir.Progress) {})
	assert.Equal(t, req.Base, c.Changes, "named intents are benched as named, each domain as its changes choose")
	assert.Equal(t, []string{"books.example/find"}, c.Intents)
}

// TestALocalBenchOfAPullRequestsChangesIsAgainstItsBase: a bench with the
// pull request's base benches what the pull request changed since it, each
// domain as config.Comparisons chooses (bench.Config.Changes), at head.
func TestALocalBenchOfAPullRequestsChangesIsAgainstItsBase(t *testing.T) {
	o := validOptions(t)
	o.GitURL = "https://git.example/{owner}/{repo}.git"
	o.LocalBench = bench.Config{Agent: "pi", Pairs: 10, Model: bench.ScriptedModel, RunsDir: "/var/runs"}
	r := NewLocalRunner(o, slog.New(slog.DiscardHandler))
	base := "0123456789abcdef0123456789abcdef01234567"
	c := r.config(bot.Request{RunID: "pr-7-abc", Repo: bot.Repo{Owner: "octo", Name: "registry"}, PR: 7, HeadSHA: "abc123",
		Domains: []string{"books.example"}, Base: base}, func(rundir.Progress) {})
	assert.Equal(t, base, c.Changes)
	assert.Empty(t, c.Intents, "the diff chooses the intents")
	assert.Equal(t, "abc123", c.Git.Ref, "head is read from git; the base through the same cache")
}
