package rundir

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestPairIndex: positions are found by intent and pair number, dense and
// wild numbers alike, absent ones are not, and Positions lists an
// intent's in pair-number order.
func TestPairIndex(t *testing.T) {
	x := NewPairIndex()
	x.Set("a", 3, 0)
	x.Set("a", 0, 1)
	x.Set("b", 0, 2)
	x.Set("a", maxDensePair+5, 3)
	x.Set("a", -2, 4)
	x.Set("a", 1, 5)
	for _, c := range []struct {
		intent string
		pair   int
		want   int32
	}{{"a", 3, 0}, {"a", 0, 1}, {"b", 0, 2}, {"a", maxDensePair + 5, 3}, {"a", -2, 4}, {"a", 1, 5}} {
		k, ok := x.Get(c.intent, c.pair)
		assert.True(t, ok, "%s %d", c.intent, c.pair)
		assert.Equal(t, c.want, k, "%s %d", c.intent, c.pair)
	}
	for _, c := range []struct {
		intent string
		pair   int
	}{{"a", 2}, {"a", 4}, {"a", 1000}, {"b", 3}, {"c", 0}, {"a", -1}, {"a", maxDensePair}} {
		_, ok := x.Get(c.intent, c.pair)
		assert.False(t, ok, "%s %d", c.intent, c.pair)
	}
	assert.Equal(t, []int32{4, 1, 5, 0, 3}, x.Positions("a"))
	assert.Equal(t, []int32{2}, x.Positions("b"))
	assert.Empty(t, x.Positions("c"))
}
