package server

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// fakeClock is a clock the test moves by hand.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

func TestSeenSetRemembersUntilTTL(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)}
	s := newSeenSet(time.Hour, 10, clock.now)
	k := deliveryKey{1, "a"}

	assert.True(t, s.add(k), "first sighting")
	assert.False(t, s.add(k), "redelivery")
	assert.True(t, s.add(deliveryKey{2, "a"}), "same id, other installation")

	clock.t = clock.t.Add(59 * time.Minute)
	assert.False(t, s.add(k), "still remembered just before the TTL")
	clock.t = clock.t.Add(time.Minute)
	assert.True(t, s.add(k), "forgotten once the TTL has passed")
}

func TestSeenSetIsBounded(t *testing.T) {
	clock := &fakeClock{t: time.Now()}
	s := newSeenSet(time.Hour, 3, clock.now)
	for i := range 5 {
		assert.True(t, s.add(deliveryKey{1, fmt.Sprint(i)}))
	}
	assert.Equal(t, 3, s.len())
	assert.True(t, s.add(deliveryKey{1, "0"}), "the oldest keys are evicted first")
	assert.False(t, s.add(deliveryKey{1, "4"}), "the newest are kept")
}

func TestSeenSetForget(t *testing.T) {
	s := newSeenSet(time.Hour, 3, time.Now)
	k := deliveryKey{1, "a"}
	s.add(k)
	s.forget(k)
	s.forget(deliveryKey{9, "never added"})
	assert.Equal(t, 0, s.len())
	assert.True(t, s.add(k))
}

func BenchmarkSeenSetAdd(b *testing.B) {
	s := newSeenSet(time.Hour, 100_000, time.Now)
	i := 0
	for b.Loop() {
		s.add(deliveryKey{1, fmt.Sprint(i)})
		i++
	}
}
