package githubtest

import (
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/stretchr/testify/assert"
)

func TestEnabledForApps(t *testing.T) {
	op := func(x any) *openapi3.Operation {
		return &openapi3.Operation{Extensions: map[string]any{"x-github": x}}
	}
	assert.True(t, enabledForApps(op(map[string]any{"enabledForGitHubApps": true})))
	assert.False(t, enabledForApps(op(map[string]any{"enabledForGitHubApps": false})))
	assert.False(t, enabledForApps(op(nil)), "an operation without x-github is not enabled")
}
