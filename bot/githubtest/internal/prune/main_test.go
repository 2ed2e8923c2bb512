package main

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const tinySpec = `{
  "openapi": "3.0.3",
  "info": {"title": "t", "version": "1"},
  "paths": {
    "/a": {
      "get": {"operationId": "a/get", "responses": {"200": {"description": "ok",
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/A"},
          "examples": {"one": {"$ref": "#/components/examples/one"}}}}}}},
      "post": {"operationId": "a/post", "responses": {"200": {"$ref": "#/components/responses/unused"}}}
    },
    "/b": {"get": {"operationId": "b/get", "responses": {"200": {"description": "ok"}}}}
  },
  "components": {
    "schemas": {
      "A": {"type": "object", "properties": {"b": {"$ref": "#/components/schemas/B"}, "examples": {"type": "string"}}},
      "B": {"type": "string"},
      "C": {"type": "integer"}
    },
    "examples": {"one": {"value": 1}},
    "responses": {"unused": {"description": "x"}}
  }
}`

func TestPrune(t *testing.T) {
	var doc map[string]any
	require.NoError(t, json.Unmarshal([]byte(tinySpec), &doc))
	out, err := prune(doc, map[string][]string{"/a": {"get"}})
	require.NoError(t, err)

	paths := out["paths"].(map[string]any)
	assert.Len(t, paths, 1)
	a := paths["/a"].(map[string]any)
	assert.Contains(t, a, "get")
	assert.NotContains(t, a, "post", "operations not listed are dropped")

	comps := out["components"].(map[string]any)
	schemas := comps["schemas"].(map[string]any)
	assert.Len(t, schemas, 2, "A and what it references, B; not C")
	assert.Contains(t, schemas, "B")
	assert.NotContains(t, comps, "responses")
	assert.NotContains(t, comps, "examples", "example objects are dropped with their references")
	props := schemas["A"].(map[string]any)["properties"].(map[string]any)
	assert.Contains(t, props, "examples", "a property named examples is kept")
	assert.Equal(t, "3.0.3", out["openapi"])

	_, err = prune(doc, map[string][]string{"/nope": {"get"}})
	assert.Error(t, err)
	_, err = prune(doc, map[string][]string{"/b": {"delete"}})
	assert.Error(t, err)
}
