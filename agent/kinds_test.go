package agent_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench/agent"
	"github.com/pairbench/pairbench/agent/launch"
	"github.com/pairbench/pairbench/internal/realstack"
)

// TestEveryKindIsWhole: a row of the table is all an agent needs, so every
// row has every part, and the names are the rows', the default first.
func TestEveryKindIsWhole(t *testing.T) {
	require.NotEmpty(t, agent.Kinds)
	assert.Equal(t, agent.Default, agent.Kinds[0].Name, "the default is the first row")
	seen := map[string]bool{}
	for i, k := range agent.Kinds {
		assert.Regexp(t, `^[a-z][a-z0-9-]*$`, k.Name, "row %d", i)
		assert.False(t, seen[k.Name], "%s is one row", k.Name)
		seen[k.Name] = true
		assert.NotEmpty(t, k.Package, k.Name)
		assert.NotNil(t, k.Check, k.Name)
		assert.NotNil(t, k.New, k.Name)
		assert.NotNil(t, k.Steps, k.Name)
		assert.Equal(t, k.Name, agent.Names[i])
		got, err := agent.Find(k.Name)
		require.NoError(t, err)
		assert.Equal(t, k.Name, got.Name)
	}
	assert.Len(t, agent.Names, len(agent.Kinds))
}

// TestEveryKindIsInstalled: each row's package and binary are where setup
// installs them: the agent builds, and its package.json names a version.
func TestEveryKindIsInstalled(t *testing.T) {
	realstack.Need(t)
	tools := launch.Tools{NodeModules: realstack.NodeModules(t)}
	exe, err := os.Executable()
	require.NoError(t, err)
	for _, name := range agent.Names {
		a, err := agent.New(name, agent.Config{Tools: tools, Executable: exe, TempRoot: t.TempDir()})
		require.NoError(t, err, name)
		require.NoError(t, a.Close())
		b, err := os.ReadFile(filepath.Join(agent.Package(name, tools), "package.json"))
		require.NoError(t, err, name)
		var meta struct {
			Version string `json:"version"`
		}
		require.NoError(t, json.Unmarshal(b, &meta))
		assert.Regexp(t, `^\d+\.\d+\.\d+`, meta.Version, name)
	}
	_, err = agent.New("aider", agent.Config{Tools: tools})
	assert.EqualError(t, err, `unknown agent "aider"; want one of pi, claude-code, codex`)

	// A missing install says so, for each agent.
	for _, name := range agent.Names {
		_, err := agent.New(name, agent.Config{Tools: launch.Tools{NodeModules: t.TempDir()}})
		assert.ErrorContains(t, err, "make setup", name)
	}
}
