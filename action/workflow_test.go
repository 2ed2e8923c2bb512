package action

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"
)

// exampleWorkflow is the workflow registries copy.
type exampleWorkflow struct {
	On          map[string]any `yaml:"on"`
	Env         map[string]string
	Concurrency struct {
		Group            string `yaml:"group"`
		CancelInProgress string `yaml:"cancel-in-progress"`
	}
	Jobs map[string]struct {
		RunsOn any               `yaml:"runs-on"`
		Env    map[string]string `yaml:"env"`
		Steps  []struct {
			Uses string            `yaml:"uses"`
			Env  map[string]string `yaml:"env"`
		}
	}
}

// TestExampleWorkflowKeepsForksOffSelfHostedRunners checks the example
// workflow's hardening (keepsForksOff), and that a concurrency group for
// the service's dispatches is each run's own.
func TestExampleWorkflowKeepsForksOffSelfHostedRunners(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(root, "examples/workflows/pairbench.yml"))
	require.NoError(t, err)
	wf := keepsForksOff(t, "examples/workflows/pairbench.yml", data)
	assert.Contains(t, wf.Concurrency.Group, "inputs.run_id", "each service dispatch has a group of its own")
	assert.Contains(t, wf.Concurrency.CancelInProgress, "inputs.run_id == ''", "a service run is never cancelled by another")
}

// TestDocumentedWorkflowsKeepForksOffSelfHostedRunners: every workflow the
// README and docs/action.md show, the first thing a user copies, is as
// safe as the example (keepsForksOff) and passes actionlint. The README's
// used to run on pull_request behind an if:, which a fork's copy of the
// workflow can simply delete.
func TestDocumentedWorkflowsKeepForksOffSelfHostedRunners(t *testing.T) {
	found := 0
	for _, doc := range []string{"README.md", "docs/action.md"} {
		data, err := os.ReadFile(filepath.Join(root, doc))
		require.NoError(t, err)
		for i, block := range workflowBlocks(string(data)) {
			found++
			name := fmt.Sprintf("%s, workflow %d", doc, i+1)
			keepsForksOff(t, name, []byte(block))
			file := filepath.Join(t.TempDir(), "documented.yml")
			require.NoError(t, os.WriteFile(file, []byte(block), 0o644))
			out, ok := actionlint(t, file)
			assert.True(t, ok, "%s: actionlint:\n%s", name, out)
		}
	}
	assert.GreaterOrEqual(t, found, 2, "the README's and docs/action.md's workflows")
}

// workflowBlocks returns the YAML code blocks of a Markdown document that
// are workflows (they have jobs).
func workflowBlocks(doc string) []string {
	var blocks []string
	for _, m := range regexp.MustCompile("(?ms)^```ya?ml\n(.*?)^```").FindAllStringSubmatch(doc, -1) {
		if regexp.MustCompile(`(?m)^jobs:`).MatchString(m[1]) {
			blocks = append(blocks, m[1])
		}
	}
	return blocks
}

// keepsForksOff checks a workflow's hardening: no trigger that runs a pull
// request's copy of the workflow or its code unreviewed (a fork could
// rewrite any if:), every action pinned by a full commit SHA, secrets given
// to steps (never to a job or the workflow).
func keepsForksOff(t *testing.T, name string, data []byte) exampleWorkflow {
	t.Helper()
	var wf exampleWorkflow
	require.NoError(t, yaml.Unmarshal(data, &wf), name)
	require.NotEmpty(t, wf.On, "%s: no trigger", name)
	for trigger := range wf.On {
		assert.NotContains(t, []string{"pull_request", "pull_request_target", "issue_comment", "push"}, trigger,
			"%s: trigger %s runs on self-hosted runners with code or configuration a pull request controls", name, trigger)
	}
	pinned := regexp.MustCompile(`^[^@]+@[0-9a-f]{40}$`)
	secret := regexp.MustCompile(`\$\{\{\s*secrets\.`)
	for k, v := range wf.Env {
		assert.NotRegexp(t, secret, v, "%s: workflow env %s holds a secret", name, k)
	}
	for job, j := range wf.Jobs {
		for k, v := range j.Env {
			assert.NotRegexp(t, secret, v, "%s: job %s env %s holds a secret: every step would see it", name, job, k)
		}
		for _, st := range j.Steps {
			if st.Uses != "" {
				assert.Regexp(t, pinned, st.Uses, "%s: job %s: %s is not pinned by commit", name, job, st.Uses)
			}
		}
	}
	return wf
}

// TestStepsThatNeedNoSecretsDropThem runs drop_secrets as the install,
// build and check scripts do, with the secrets a workflow hands the Action:
// none is left, and what the steps do need stays.
func TestStepsThatNeedNoSecretsDropThem(t *testing.T) {
	for _, script := range []string{"setup.sh", "build.sh", "check.sh"} {
		body, err := os.ReadFile(filepath.Join(root, "action", script))
		require.NoError(t, err)
		assert.Regexp(t, `(?m)^source "\$GITHUB_ACTION_PATH/action/lib.sh"\ndrop_secrets$`, string(body), "%s drops the secrets first", script)
	}
	cmd := exec.Command("bash", "-c", `source action/lib.sh; drop_secrets; env`)
	cmd.Dir = root
	cmd.Env = []string{"RUNNER_TEMP=" + t.TempDir(), "PATH=" + os.Getenv("PATH"), "HOME=/nonexistent",
		"AWS_ACCESS_KEY_ID=AKIAEXAMPLE", "AWS_SECRET_ACCESS_KEY=secret", "AWS_SESSION_TOKEN=tok", "AWS_REGION=eu-west-1",
		"OPENAI_API_KEY=sk-1", "ANTHROPIC_API_KEY=sk-2", "CLAUDE_CODE_OAUTH_TOKEN=t", "GITHUB_TOKEN=ghs_1",
		"MY_SERVICE_PASSWORD=p", "GITHUB_OUTPUT=/tmp/out", "PB_BIN=/tmp/pairbench"}
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
	env := string(out)
	for _, gone := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "OPENAI_API_KEY",
		"ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN", "GITHUB_TOKEN", "MY_SERVICE_PASSWORD"} {
		assert.NotContains(t, env, gone+"=", "%s reaches a step that needs no secret", gone)
	}
	for _, kept := range []string{"AWS_REGION=eu-west-1", "GITHUB_OUTPUT=/tmp/out", "PB_BIN=/tmp/pairbench"} {
		assert.True(t, strings.Contains(env, kept), "%s is kept", kept)
	}
}
