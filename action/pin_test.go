package action

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"
)

// TestExampleWorkflowPinTakesItsInputs checks the pairbench commit the
// example workflow pins: every input the workflow passes to the Action is
// one the Action declares at that commit, so a pin left behind by a new
// input fails here rather than in a user's first run (docs/action.md,
// "Pinned dependencies").
func TestExampleWorkflowPinTakesItsInputs(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(root, "examples/workflows/pairbench.yml"))
	require.NoError(t, err)
	var wf workflowSteps
	require.NoError(t, yaml.Unmarshal(data, &wf))
	uses := 0
	for job, j := range wf.Jobs {
		for _, st := range j.Steps {
			commit, ok := strings.CutPrefix(st.Uses, "pairbench/pairbench@")
			if !ok {
				continue
			}
			uses++
			out, err := exec.Command("git", "-C", root, "show", commit+":action.yml").Output()
			if shallow, _ := exec.Command("git", "-C", root, "rev-parse", "--is-shallow-repository").Output(); err != nil && strings.TrimSpace(string(shallow)) == "true" {
				t.Skipf("job %s pins %s, which this shallow clone's history does not hold: the test needs a full clone", job, commit)
			}
			require.NoError(t, err, "job %s pins %s, which this clone's history does not have", job, commit)
			var action struct {
				Inputs map[string]any `yaml:"inputs"`
			}
			require.NoError(t, yaml.Unmarshal(out, &action))
			for input := range st.With {
				_, declared := action.Inputs[input]
				assert.True(t, declared, "job %s passes %q, which action.yml at the pinned %s does not take", job, input, commit[:12])
			}
		}
	}
	assert.Positive(t, uses, "the example workflow uses the Action")
}

// workflowSteps is a workflow's jobs and their steps: what each uses, and
// with what.
type workflowSteps struct {
	Jobs map[string]struct {
		Steps []struct {
			Uses string         `yaml:"uses"`
			With map[string]any `yaml:"with"`
		}
	}
}
