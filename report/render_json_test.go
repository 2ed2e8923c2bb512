package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestJSONGolden(t *testing.T) {
	var buf bytes.Buffer
	require.NoError(t, WriteJSON(&buf, fixtureReport()))
	assertGolden(t, "report.json", buf.Bytes())
}

func TestJSONRoundTripIsStable(t *testing.T) {
	var first bytes.Buffer
	require.NoError(t, WriteJSON(&first, fixtureReport()))

	back, err := ReadJSON(bytes.NewReader(first.Bytes()))
	require.NoError(t, err)
	var second bytes.Buffer
	require.NoError(t, WriteJSON(&second, back))
	assert.Equal(t, first.String(), second.String(), "decoding and re-encoding report.json changed it")

	assert.Contains(t, first.String(), `"hi": null`, "an unbounded interval is written as null")
	assert.True(t, strings.HasPrefix(first.String(), "{\n  \"v\": 2,\n  \"run_id\":"), "fields keep their declared order")
}

func TestReadJSONRefusesOtherVersions(t *testing.T) {
	_, err := ReadJSON(strings.NewReader(`{"v": 1, "run_id": "r"}`))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "unsupported report version 1")

	_, err = ReadJSON(strings.NewReader(`{"v": 1`))
	require.Error(t, err)
}
