package idle

import (
	"errors"
	"slices"
	"testing"
)

// TestStacks: last in, first out per key; beyond max and after Close a
// connection is discarded; Close discards what is kept and Get then fails.
func TestStacks(t *testing.T) {
	var discarded []int
	s := New[string](3, func(c int) { discarded = append(discarded, c) })
	if _, _, ok, err := s.Get("a"); ok || err != nil {
		t.Fatalf("Get on an empty stack: ok %v, err %v", ok, err)
	}
	s.Put("a", 1)
	s.Put("a", 2)
	s.Put("b", 3)
	s.Put("b", 4) // a fourth: over max
	if !slices.Equal(discarded, []int{4}) || s.Len() != 3 || !slices.Equal(s.Kept("a"), []int{1, 2}) {
		t.Fatalf("after 4 puts with max 3: discarded %v, Len %d, kept a %v", discarded, s.Len(), s.Kept("a"))
	}
	if c, since, ok, err := s.Get("a"); c != 2 || !ok || err != nil || since.IsZero() {
		t.Fatalf("Get(a) = %d, %v, %v, %v; want 2, its time, true, nil", c, since, ok, err)
	}
	s.Close()
	slices.Sort(discarded)
	if !slices.Equal(discarded, []int{1, 3, 4}) || s.Len() != 0 {
		t.Fatalf("after Close: discarded %v, Len %d", discarded, s.Len())
	}
	if _, _, ok, err := s.Get("a"); ok || !errors.Is(err, ErrClosed) {
		t.Fatalf("Get after Close: ok %v, err %v; want ErrClosed", ok, err)
	}
	s.Put("a", 5)
	if discarded[len(discarded)-1] != 5 {
		t.Fatalf("Put after Close kept the connection: discarded %v", discarded)
	}

	none := New[struct{}](0, func(int) {})
	none.Put(struct{}{}, 1)
	if none.Len() != 0 {
		t.Fatal("a stack of max 0 kept a connection")
	}
	all := New[struct{}](NoLimit, func(int) {})
	for i := range 100 {
		all.Put(struct{}{}, i)
	}
	if all.Len() != 100 {
		t.Fatalf("NoLimit kept %d of 100", all.Len())
	}
}
