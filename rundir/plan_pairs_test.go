package rundir

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// plannedPairLists are lists of pairs as a plan writes them and as it
// never does, each read the same by PlannedPairList and encoding/json.
var plannedPairLists = []string{
	`[]`,
	` [ ] `,
	`null`,
	`[{"pair":0,"order":"AB"},{"pair":1,"order":"BA"}]`,
	"[\n  {\n    \"pair\": 0,\n    \"order\": \"AB\"\n  },\n  {\n    \"pair\": 12,\n    \"order\": \"BA\"\n  }\n]",
	`[{"order":"BA","pair":3}]`,
	`[{"pair":-4,"order":"XY"}]`,
	`[{}]`,
	`[{"pair":1}]`,
	`[{"pair":1,"pair":2,"order":"AB","order":"BA"}]`,
	`[{"Pair":1,"ORDER":"AB"}]`,
	`[{"pair":1,"order":"AB","extra":[1,{"x":2}]}]`,
	`[{"pair":1,"order":"A\u0042"}]`,
	`[{"pair":1,"order":"A\"B"}]`,
	`[{"pair":1,"order":"Ä"}]`,
	"[{\"pair\":1,\"order\":\"\xff\"}]",
	`[{"pair":1.0,"order":"AB"}]`,
	`[{"pair":1e2,"order":"AB"}]`,
	`[{"pair":99999999999999999999,"order":"AB"}]`,
	`[{"pair":"1","order":"AB"}]`,
	`[{"pair":1,"order":2}]`,
	`[{"pair":1,"order":null}]`,
	`[null]`,
	`[1]`,
	`{"pair":1}`,
	`"AB"`,
}

// TestPlannedPairListReadsAsEncodingJSON: whatever the list, the pairs
// and whether it is an error are encoding/json's.
func TestPlannedPairListReadsAsEncodingJSON(t *testing.T) {
	fast := 0
	for _, in := range plannedPairLists {
		if _, ok := scanPlannedPairs([]byte(in)); ok {
			fast++
		}
		samePairs(t, in)
	}
	assert.GreaterOrEqual(t, fast, 8, "the lists a plan writes take the fast way")
	_, ok := scanPlannedPairs([]byte(plannedPairLists[4]))
	assert.True(t, ok, "an indented plan's pairs take the fast way")
}

func samePairs(t *testing.T, in string) {
	t.Helper()
	var want []PlannedPair
	wantErr := json.Unmarshal([]byte(in), &want)
	var got PlannedPairList
	gotErr := json.Unmarshal([]byte(in), &got)
	require.Equal(t, wantErr != nil, gotErr != nil, "%s: error %v, encoding/json's %v", in, gotErr, wantErr)
	if wantErr == nil {
		require.Equal(t, want, []PlannedPair(got), in)
	}
}

func FuzzPlannedPairList(f *testing.F) {
	for _, in := range plannedPairLists {
		f.Add(in)
	}
	f.Fuzz(samePairs)
}
