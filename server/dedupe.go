package server

import (
	"container/list"
	"sync"
	"time"
)

// deliveryKey names one delivery: GitHub delivery ids are unique per
// webhook, and the installation keeps two Apps' ids apart.
type deliveryKey struct {
	installation int64
	id           string
}

// seenSet remembers recent deliveries so a redelivery is processed once. It
// holds at most max keys, each for at most ttl; the oldest go first. Safe
// for concurrent use.
type seenSet struct {
	ttl time.Duration
	max int
	now func() time.Time

	mu    sync.Mutex
	order *list.List // of *seenEntry, oldest at the front
	index map[deliveryKey]*list.Element
}

type seenEntry struct {
	key deliveryKey
	at  time.Time
}

func newSeenSet(ttl time.Duration, max int, now func() time.Time) *seenSet {
	return &seenSet{ttl: ttl, max: max, now: now, order: list.New(), index: map[deliveryKey]*list.Element{}}
}

// add records k and reports whether it was new. A key already present
// (and not expired) is left as it was and add returns false.
func (s *seenSet) add(k deliveryKey) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	s.expire(now)
	if _, ok := s.index[k]; ok {
		return false
	}
	s.index[k] = s.order.PushBack(&seenEntry{key: k, at: now})
	for s.order.Len() > s.max {
		s.removeElem(s.order.Front())
	}
	return true
}

// forget removes k, so a later redelivery of it is processed.
func (s *seenSet) forget(k deliveryKey) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.index[k]; ok {
		s.removeElem(e)
	}
}

// len returns the number of keys held.
func (s *seenSet) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.order.Len()
}

func (s *seenSet) expire(now time.Time) {
	for e := s.order.Front(); e != nil && now.Sub(e.Value.(*seenEntry).at) >= s.ttl; e = s.order.Front() {
		s.removeElem(e)
	}
}

func (s *seenSet) removeElem(e *list.Element) {
	delete(s.index, e.Value.(*seenEntry).key)
	s.order.Remove(e)
}
