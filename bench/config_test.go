package bench_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/pairbench/pairbench/rundir"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench/bench"
)

// TestNewRunIDsNeverCollide names many runs started in the same second:
// each gets an id of its own, so a second run never resumes the first.
func TestNewRunIDsNeverCollide(t *testing.T) {
	now := time.Date(2026, 12, 1, 18, 30, 5, 0, time.UTC)
	seen := map[string]bool{}
	for range 50 {
		id := bench.NewRunID(now)
		assert.Regexp(t, `^20261201-183005-[A-Za-z0-9]{6}$`, id)
		assert.False(t, seen[id], "run id %s given twice", id)
		seen[id] = true
	}
}

// TestCheckRunID takes the ids a run, a store and a merge can all name,
// and refuses the rest: what run, merge and view accept is one rule.
func TestCheckRunID(t *testing.T) {
	for _, id := range []string{"r1", "20261201-183005-Ab3dEf", "pr42-0123abc-deadbeef", "a.b_c-d"} {
		assert.NoError(t, bench.CheckRunID(id), id)
	}
	for _, id := range []string{"", ".", "..", ".hidden", "a/b", "../escape", `a\b`, "a\x01b", "\xff"} {
		assert.ErrorContains(t, bench.CheckRunID(id), "--run-id", "%q", id)
	}
}

func TestParseShard(t *testing.T) {
	for in, want := range map[string][2]int{"": {0, 0}, "1/1": {1, 1}, "2/3": {2, 3}} {
		k, n, err := bench.ParseShard(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, [2]int{k, n}, in)
	}
	for _, in := range []string{"4/3", "0/3", "1/0", "x", "1/", "/2", "1-2", "a/b"} {
		_, _, err := bench.ParseShard(in)
		assert.ErrorContains(t, err, "--shard", in)
	}
}

// TestConfigCheckNamesTheFlag refuses each bad setting alone, in a line
// naming its flag, and Complete fills the host's defaults of a good one.
func TestConfigCheckNamesTheFlag(t *testing.T) {
	good := bench.Config{Agent: "pi", Model: bench.ScriptedModel, Pairs: 1, Slots: 1, Alpha: 0.05,
		Caps: rundir.PlanCaps{TimeS: 10, Turns: 5, SpendUSD: 1}, RunID: "r1"}
	require.NoError(t, good.Check())
	for want, bad := range map[string]func(*bench.Config){
		"--pairs":    func(c *bench.Config) { c.Pairs = 0 },
		"--slots":    func(c *bench.Config) { c.Slots = 0 },
		"--adoption": func(c *bench.Config) { c.Adoption = -1 },
		"every cap":  func(c *bench.Config) { c.Caps.Turns = 0 },
		"--alpha":    func(c *bench.Config) { c.Alpha = 1 },
		"--run-id":   func(c *bench.Config) { c.RunID = "../escape" },
		"nonsense":   func(c *bench.Config) { c.Model = "nonsense" },
		"no-agent":   func(c *bench.Config) { c.Agent = "no-agent" },
		"--browser":  func(c *bench.Config) { c.Browser.Provider = "elsewhere" },
		"--stealth":  func(c *bench.Config) { c.Browser.Stealth = true },
		"--looks 11": func(c *bench.Config) { c.Looks = bench.MaxLooks + 1 },
	} {
		c := good
		bad(&c)
		assert.ErrorContains(t, c.Check(), want)
		assert.ErrorContains(t, c.Complete(), want, "Complete checks too")
	}

	c := good
	c.Tools = "tools/node_modules"
	require.NoError(t, c.Complete())
	assert.True(t, filepath.IsAbs(c.Tools), c.Tools)
	assert.NotEmpty(t, c.TempDir)
}

// TestDefaultConfigIsABenchConfig: a bench told nothing else passes its own
// checks once it has a run id, and a broken one does not.
// TestCompleteDrawsARunID: a bench told no run id gets a new one; one told
// an id keeps it.
func TestCompleteDrawsARunID(t *testing.T) {
	c := bench.DefaultConfig()
	require.NoError(t, c.Complete())
	assert.NoError(t, bench.CheckRunID(c.RunID))
	assert.Regexp(t, `^[0-9]{8}-[0-9]{6}-[0-9A-Z]+$`, c.RunID)
	c.RunID = "r1"
	require.NoError(t, c.Complete())
	assert.Equal(t, "r1", c.RunID)
}

func TestDefaultConfigIsABenchConfig(t *testing.T) {
	c := bench.DefaultConfig()
	c.RunID = "r1"
	assert.NoError(t, c.Check())
	c.Pairs = 0
	assert.Error(t, c.Check())
}

func TestParseHosts(t *testing.T) {
	hosts, err := bench.ParseHosts(t.Context(), []string{"books.example=127.0.0.1:8081", "weather.example=127.0.0.1:8082"})
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"books.example": "127.0.0.1:8081", "weather.example": "127.0.0.1:8082"}, hosts)
	hosts, err = bench.ParseHosts(t.Context(), nil)
	require.NoError(t, err)
	assert.Nil(t, hosts)
	_, err = bench.ParseHosts(t.Context(), []string{"books.example"})
	assert.ErrorContains(t, err, `--host "books.example": want name=ADDRESS:PORT`)

	// A name is resolved once, here: localhost:18431 (IPv4 first).
	hosts, err = bench.ParseHosts(t.Context(), []string{"Books.Example=localhost:18431", "w.example=[::1]:8080"})
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"books.example": "127.0.0.1:18431", "w.example": "[::1]:8080"}, hosts)
	for arg, want := range map[string]string{
		"books.example=localhost":          "want ADDRESS:PORT",
		"books.example=localhost:http":     `port "http" is not a port number`,
		"books.example=nowhere.invalid:80": "nowhere.invalid does not resolve on this host",
		"=127.0.0.1:80":                    "want name=ADDRESS:PORT",
	} {
		_, err = bench.ParseHosts(t.Context(), []string{arg})
		assert.ErrorContains(t, err, want, arg)
	}
}

func TestParseOrigins(t *testing.T) {
	o, err := bench.ParseOrigins([]string{"Example.com=https://Staging.example.com/", "http://a.test:8080=http://localhost:9000"})
	require.NoError(t, err)
	assert.Equal(t, []bench.Origin{{From: "example.com", To: "https://staging.example.com"}, {From: "http://a.test:8080", To: "http://localhost:9000"}}, o)
	for _, bad := range []string{"example.com", "example.com=staging.example.com", "example.com=https://s.example.com/app",
		"example.com=ftp://s.example.com", "example.com/x=https://s.example.com", "*.example.com=https://s.example.com"} {
		_, err := bench.ParseOrigins([]string{bad})
		assert.ErrorContains(t, err, "want FROM=TO", bad)
	}
}
