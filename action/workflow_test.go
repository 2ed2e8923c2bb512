package action

import (
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
// workflow's hardening: no trigger that runs a pull request's copy of the
// workflow (a fork could rewrite any if:), every action pinned by a full
// commit SHA, secrets given to steps (never to a job or the workflow), and
// a concurrency group for the service's dispatches that is each run's own.
func TestExampleWorkflowKeepsForksOffSelfHostedRunners(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(root, "examples/workflows/pairbench.yml"))
	require.NoError(t, err)
	var wf exampleWorkflow
	require.NoError(t, yaml.Unmarshal(data, &wf))
	for trigger := range wf.On {
		assert.NotContains(t, []string{"pull_request", "pull_request_target", "issue_comment", "push"}, trigger,
			"trigger %s runs on self-hosted runners with code or configuration a pull request controls", trigger)
	}
	pinned := regexp.MustCompile(`^[^@]+@[0-9a-f]{40}$`)
	secret := regexp.MustCompile(`\$\{\{\s*secrets\.`)
	for k, v := range wf.Env {
		assert.NotRegexp(t, secret, v, "workflow env %s holds a secret", k)
	}
	for name, job := range wf.Jobs {
		for k, v := range job.Env {
			assert.NotRegexp(t, secret, v, "job %s env %s holds a secret: every step would see it", name, k)
		}
		for _, st := range job.Steps {
			if st.Uses != "" {
				assert.Regexp(t, pinned, st.Uses, "job %s: %s is not pinned by commit", name, st.Uses)
			}
		}
	}
	assert.Contains(t, wf.Concurrency.Group, "inputs.run_id", "each service dispatch has a group of its own")
	assert.Contains(t, wf.Concurrency.CancelInProgress, "inputs.run_id == ''", "a service run is never cancelled by another")
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
