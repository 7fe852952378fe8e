// Package workload holds what every workload shares: its self-description
// (Meta) and the registry the CLI is built from. A workload knows its data
// and operations but no database; the family Store interface it declares is
// what adapters implement.
package workload

import (
	"fmt"
	"sort"
	"sync"
)

// Meta is a workload's self-description.
type Meta struct {
	Name        string
	Description string
	Operations  []string
	Models      []string // data models; empty when the workload has one
	// Options are not here: a workload's job declares them once (job.Opts).
}

// Workload is the registry entry of one workload family.
type Workload interface {
	Meta() Meta
	// Supports reports whether db (an adapter's DB, possibly a nil pointer
	// of its type) implements this family's Backend interface. Adapters
	// derive the families they list from it, so the list cannot drift from
	// what the compiler checked.
	Supports(db any) bool
}

var (
	mu       sync.RWMutex
	registry = map[string]Workload{}
)

// Register adds w to the registry. It panics on a duplicate name because
// that is a programming error found at start-up, never a user error.
func Register(w Workload) {
	mu.Lock()
	defer mu.Unlock()
	name := w.Meta().Name
	if _, dup := registry[name]; dup {
		panic("workload: duplicate registration of " + name)
	}
	registry[name] = w
}

// Get returns the workload called name.
func Get(name string) (Workload, error) {
	mu.RLock()
	defer mu.RUnlock()
	w, ok := registry[name]
	if !ok {
		return nil, fmt.Errorf("unknown workload %q (known: %v)", name, namesLocked())
	}
	return w, nil
}

// Registered returns every workload sorted by name.
func Registered() []Workload {
	mu.RLock()
	defer mu.RUnlock()
	out := make([]Workload, 0, len(registry))
	for _, n := range namesLocked() {
		out = append(out, registry[n])
	}
	return out
}

func namesLocked() []string {
	names := make([]string, 0, len(registry))
	for n := range registry {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
