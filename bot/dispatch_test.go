package bot_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pairbench/pairbench/bot"
)

func TestWorkflowInputsLimits(t *testing.T) {
	t.Parallel()
	req := bot.Request{
		RunID:   bot.RunID("pr2-" + headSHA + "-0a1b2c3d"),
		Repo:    bot.Repo{Owner: "Codertocat", Name: "Hello-World", DefaultBranch: defaultRef, Installation: installID},
		PR:      prNumber,
		HeadSHA: headSHA,
		Domains: []string{"books.example", "weather.example"},
		Intents: []string{"books-count"},
		Pairs:   12,
	}
	in, err := bot.WorkflowInputs(req)
	require.NoError(t, err)
	assert.Equal(t, map[string]any{
		"run_id": "pr2-" + headSHA + "-0a1b2c3d", "pr": "2", "head_sha": headSHA,
		"domains": "books.example,weather.example", "intents": "books-count", "pairs": "12",
	}, in)
	req.Agent = "codex"
	in, err = bot.WorkflowInputs(req)
	require.NoError(t, err)
	assert.Equal(t, "codex", in["agent"], "the agent is sent when asked for")
	for len(strings.Join(req.Intents, ",")) < 65535 {
		req.Intents = append(req.Intents, strings.Repeat("i", 199))
	}
	_, err = bot.WorkflowInputs(req)
	require.ErrorIs(t, err, bot.ErrInputsTooLarge)
}

func workflowRunPayload(t *testing.T, id int64, run, conclusion string) []byte {
	return payload(t, "workflow_run.completed.json", map[string]any{
		"repository.name":                        "Hello-World",
		"repository.full_name":                   repoName,
		"repository.owner.login":                 "Codertocat",
		"repository.default_branch":              "master",
		"workflow_run.id":                        id,
		"workflow_run.event":                     "workflow_dispatch",
		"workflow_run.head_repository.full_name": repoName,
		"workflow_run.path":                      ".github/workflows/pairbench.yml",
		"workflow_run.display_title":             "pairbench " + run,
		"workflow_run.conclusion":                conclusion,
		"workflow_run.html_url":                  "https://github.com/Codertocat/Hello-World/actions/runs/1",
	})
}
