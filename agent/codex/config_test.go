package codex

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/pairbench/pairbench/rundir"
	"github.com/pairbench/pairbench/runner"
)

// TestConfigTurnsAnalyticsOff: Codex sends analytics to ab.chatgpt.com,
// which the egress proxy refuses, once per trial, in every run's log. The
// config turns them off, so Codex does not try.
func TestConfigTurnsAnalyticsOff(t *testing.T) {
	toml := ConfigTOML(runner.AgentTask{Model: rundir.Model{Provider: "openai", ID: "gpt-x"}}, nil)
	section := ""
	analytics := ""
	for line := range strings.SplitSeq(toml, "\n") {
		if strings.HasPrefix(line, "[") {
			section = line
			continue
		}
		if section == "[analytics]" && strings.HasPrefix(line, "enabled") {
			analytics = line
		}
	}
	assert.Equal(t, "enabled = false", analytics, "config.toml:\n%s", toml)
}
