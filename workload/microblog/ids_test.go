package microblog

import (
	"sync"
	"testing"
	"time"
)

// Ids of one source never repeat, even past 1,024 a millisecond, and carry
// their source; two sources never share an id.
func TestTweetIDsUnique(t *testing.T) {
	frozen := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	seen := map[int64]bool{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, src := range []int{0, 1, MaxIDSource} {
		g := NewTweetIDs(src)
		g.now = func() time.Time { return frozen } // every id in one millisecond
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 1000 {
					id := g.Next()
					mu.Lock()
					if seen[id] {
						t.Errorf("id %d repeated", id)
					}
					seen[id] = true
					mu.Unlock()
					if IDSource(id) != src {
						t.Errorf("id %d has source %d, want %d", id, IDSource(id), src)
					}
					if id <= 1<<32 {
						t.Errorf("id %d could meet a dataset's ids", id)
					}
				}
			}()
		}
	}
	wg.Wait()
	if len(seen) != 12000 {
		t.Errorf("%d distinct ids, want 12000", len(seen))
	}
}

// Later ids are larger: posts of one source keep their order.
func TestTweetIDsIncrease(t *testing.T) {
	g := NewTweetIDs(7)
	prev := g.Next()
	for range 5000 {
		id := g.Next()
		if id <= prev {
			t.Fatalf("id %d after %d", id, prev)
		}
		prev = id
	}
}
