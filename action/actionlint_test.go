package action

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/pairbench/pairbench/internal/realstack"
)

// root is the repository root: the Action's checkout.
const root = ".."

// workflowFiles lists every workflow: the project's own and the examples
// registries copy.
func workflowFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	for _, dir := range []string{".github/workflows", "examples/workflows"} {
		for _, ext := range []string{"*.yml", "*.yaml"} {
			m, err := filepath.Glob(filepath.Join(root, dir, ext))
			require.NoError(t, err)
			files = append(files, m...)
		}
	}
	require.NotEmpty(t, files)
	return files
}

// actionlint runs actionlint (built into tools/bin by scripts/setup.sh) on
// files from the repository root and returns its report; it fails the test
// if actionlint could not run.
func actionlint(t *testing.T, files ...string) (problems string, ok bool) {
	t.Helper()
	realstack.Need(t, realstack.Actionlint)
	bin, err := filepath.Abs(filepath.Join(root, "tools/bin/actionlint"))
	require.NoError(t, err)
	cmd := exec.Command(bin, append([]string{"-oneline", "-no-color", "-config-file", ".github/actionlint.yaml"}, files...)...)
	cmd.Dir = root
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.ExitCode() == 1 {
		return out.String(), false // problems found
	}
	require.NoError(t, err, "actionlint could not run: %s", out.String())
	return out.String(), true
}

// The lint tests run actionlint v1.7.12 as a program built from its Go
// module (scripts/setup.sh): the module does not compile as a library in
// this module's graph, which selects go.yaml.in/yaml/v4 v4.0.0.

// TestActionlintWorkflows lints every workflow. ci.yml uses the Action from
// this checkout (uses: ./), so actionlint also reads action.yml's metadata
// there and checks the inputs given against it.
func TestActionlintWorkflows(t *testing.T) {
	var rel []string
	for _, f := range workflowFiles(t) {
		r, err := filepath.Rel(root, f)
		require.NoError(t, err)
		rel = append(rel, r)
	}
	out, ok := actionlint(t, rel...)
	assert.True(t, ok, "actionlint:\n%s", out)
}

// TestActionlintActionSteps lints action.yml's composite steps: actionlint
// reads workflows only, so the test wraps the steps in a reusable workflow
// whose inputs are the Action's inputs and whose job outputs are the
// Action's outputs, and lints that (expressions, contexts, step ids, shell).
func TestActionlintActionSteps(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(root, "action.yml"))
	require.NoError(t, err)
	var action struct {
		Inputs  map[string]map[string]any `yaml:"inputs"`
		Outputs map[string]map[string]any `yaml:"outputs"`
		Runs    struct {
			Using string           `yaml:"using"`
			Steps []map[string]any `yaml:"steps"`
		} `yaml:"runs"`
	}
	require.NoError(t, yaml.Unmarshal(data, &action))
	require.Equal(t, "composite", action.Runs.Using)

	inputs := map[string]any{}
	for name, in := range action.Inputs {
		require.NotEmpty(t, in["description"], "input %s has a description", name)
		inputs[name] = map[string]any{"type": "string", "required": false, "default": in["default"], "description": in["description"]}
	}
	outputs, jobOutputs := map[string]any{}, map[string]any{}
	for name, o := range action.Outputs {
		require.NotEmpty(t, o["description"], "output %s has a description", name)
		jobOutputs[name] = o["value"]
		outputs[name] = map[string]any{"value": "${{ jobs.action.outputs." + name + " }}"}
	}
	wf := map[string]any{
		"name": "action.yml steps",
		"on":   map[string]any{"workflow_call": map[string]any{"inputs": inputs, "outputs": outputs}},
		"jobs": map[string]any{"action": map[string]any{
			"runs-on": []string{"self-hosted", "linux", "pairbench"},
			"outputs": jobOutputs,
			"steps":   action.Runs.Steps,
		}},
	}
	content, err := yaml.Marshal(wf)
	require.NoError(t, err)

	wfFile := filepath.Join(t.TempDir(), "action-steps.yml")
	require.NoError(t, os.WriteFile(wfFile, content, 0o644))
	out, ok := actionlint(t, wfFile)
	assert.True(t, ok, "actionlint:\n%s\nlinted:\n%s", out, content)
}

// TestNoExpressionInRun checks that no run: script in action.yml or any
// workflow contains a ${{ }} expression: every value reaches a script
// through env:, so no input, branch name or title is ever spliced into
// shell code.
func TestNoExpressionInRun(t *testing.T) {
	files := append(workflowFiles(t), filepath.Join(root, "action.yml"))
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		var doc yaml.Node
		require.NoError(t, yaml.Unmarshal(data, &doc), f)
		runs := 0
		walkRuns(&doc, func(n *yaml.Node) {
			runs++
			assert.NotContains(t, n.Value, "${{", "%s:%d: run: holds an expression; pass it through env:", f, n.Line)
		})
		assert.Positive(t, runs, "%s has run: steps", f)
	}
}

// walkRuns calls fn with the value of every "run" key under n.
func walkRuns(n *yaml.Node, fn func(*yaml.Node)) {
	if n.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == "run" && n.Content[i+1].Kind == yaml.ScalarNode {
				fn(n.Content[i+1])
			}
		}
	}
	for _, c := range n.Content {
		walkRuns(c, fn)
	}
}

// TestActionScriptsReadOnlyEnvironment checks the step scripts' contract:
// each is bash under set -euo pipefail (through lib.sh) and action.yml
// runs each one by path, never inline code.
func TestActionScriptsReadOnlyEnvironment(t *testing.T) {
	meta, err := readActionMeta(filepath.Join(root, "action.yml"))
	require.NoError(t, err)
	for _, st := range meta.Runs.Steps {
		if st.Run == "" {
			continue
		}
		script, ok := strings.CutPrefix(strings.TrimSpace(st.Run), `bash "$GITHUB_ACTION_PATH/action/`)
		require.True(t, ok, "step %q runs a script of action/: %q", st.Name, st.Run)
		name := strings.TrimSuffix(script, `"`)
		body, err := os.ReadFile(filepath.Join(root, "action", name))
		require.NoError(t, err, st.Name)
		assert.Contains(t, string(body), `source "$GITHUB_ACTION_PATH/action/lib.sh"`, name)
	}
	lib, err := os.ReadFile(filepath.Join(root, "action", "lib.sh"))
	require.NoError(t, err)
	assert.Contains(t, string(lib), "set -euo pipefail")
	assert.NotContains(t, string(lib), "eval ")
}
