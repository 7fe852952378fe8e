// Package idle keeps the connections an adapter's own client gives back
// between requests: a stack per key (a node's address), the most recently
// given back on top, as the goroutine that gave one back is the one that
// wants one next. It is the bookkeeping only: dialling, checking and
// closing a connection are the adapter's.
package idle

import (
	"errors"
	"sync"
	"time"
)

// ErrClosed is returned by Get after Close.
var ErrClosed = errors.New("closed")

// NoLimit, as the most a Stacks keeps, keeps every connection given back.
const NoLimit = -1

// Stacks keeps idle connections of type C under keys of type K; it is
// safe for concurrent use.
type Stacks[K comparable, C any] struct {
	max     int
	discard func(C)

	mu     sync.Mutex
	stacks map[K][]held[C]
	n      int
	closed bool
}

type held[C any] struct {
	c  C
	at time.Time // when it was given back
}

// New keeps at most max connections in all (NoLimit: no bound); discard
// ends one that is not kept (given back beyond max or after Close) and
// those still kept at Close.
func New[K comparable, C any](max int, discard func(C)) *Stacks[K, C] {
	return &Stacks[K, C]{max: max, discard: discard, stacks: map[K][]held[C]{}}
}

// Get pops the connection last given back under key and when it was given
// back; ok is false when none is kept, and err is ErrClosed after Close.
func (s *Stacks[K, C]) Get(key K) (c C, since time.Time, ok bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return c, since, false, ErrClosed
	}
	st := s.stacks[key]
	n := len(st)
	if n == 0 {
		return c, since, false, nil
	}
	h := st[n-1]
	st[n-1] = held[C]{} // let the stack forget it
	s.stacks[key] = st[:n-1]
	s.n--
	return h.c, h.at, true, nil
}

// Put keeps c under key for the next Get, or discards it when max are
// kept already or after Close.
func (s *Stacks[K, C]) Put(key K, c C) {
	s.mu.Lock()
	if s.closed || (s.max != NoLimit && s.n >= s.max) {
		s.mu.Unlock()
		s.discard(c)
		return
	}
	s.stacks[key] = append(s.stacks[key], held[C]{c: c, at: time.Now()})
	s.n++
	s.mu.Unlock()
}

// Close discards every connection kept; later Puts discard theirs and
// Gets fail.
func (s *Stacks[K, C]) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	for _, st := range s.stacks {
		for _, h := range st {
			s.discard(h.c)
		}
	}
	s.stacks, s.n = nil, 0
}

// Kept returns the connections kept under key, the most recently given
// back last (a copy: for tests and inspection).
func (s *Stacks[K, C]) Kept(key K) []C {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]C, 0, len(s.stacks[key]))
	for _, h := range s.stacks[key] {
		out = append(out, h.c)
	}
	return out
}

// Len is how many connections are kept, under every key.
func (s *Stacks[K, C]) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}
