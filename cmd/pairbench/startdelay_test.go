package main

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench/bench"
)

// TestStartDelayDefaultsAreExplained holds run's help and docs/cli.md to
// the two default start delays: run's and demo's differ, and both say each
// default and why, so a changed default without a word fails here.
func TestStartDelayDefaultsAreExplained(t *testing.T) {
	run, demo := bench.DefaultConfig().StartDelay, bench.DemoConfig().StartDelay
	require.NotEqual(t, run, demo, "the defaults are equal: the explanation is no longer needed")
	doc, err := os.ReadFile("../../docs/cli.md")
	require.NoError(t, err)
	for name, text := range map[string]string{"help/run.txt": longHelp("run"), "docs/cli.md": string(doc)} {
		assert.Contains(t, text, "--start-delay is "+run.String()+" by default", name)
		assert.Contains(t, text, "demo starts the agent at once ("+demo.String()+")", name)
	}
}
