package pairbench

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestScanRowsByteOrderMark: a rows file an editor saved with a UTF-8 byte
// order mark reads as without it; a mark starting a later line (two files
// pasted together) is a bad line whose error says what it is.
func TestScanRowsByteOrderMark(t *testing.T) {
	row := Row{RunID: "r1", Intent: "a", Domain: "d", Stage: StagePair, Pair: 0, Order: AB, Arm: Control, Attempt: 1, Outcome: Correct}
	line, err := AppendRow(nil, row)
	require.NoError(t, err)
	bom := []byte{0xEF, 0xBB, 0xBF}

	rows, partial, err := ReadRows(bytes.NewReader(append(append(append([]byte(nil), bom...), line...), line...)))
	require.NoError(t, err)
	assert.Zero(t, partial)
	assert.Len(t, rows, 2)

	_, _, err = ReadRows(bytes.NewReader(append(append(append([]byte(nil), line...), bom...), line...)))
	var rowErr *RowError
	require.ErrorAs(t, err, &rowErr)
	assert.Equal(t, 2, rowErr.Line)
	assert.ErrorContains(t, err, "byte order mark")
}
