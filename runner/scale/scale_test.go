package scale_test

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/fieldbench/fieldbench/adapter/null"
	"github.com/fieldbench/fieldbench/runner/scale"
)

// TestEveryFamilyRunsOnNull drives a few clients of each family on null://
// and checks the figures are read, not invented: operations completed
// without errors, a peak RSS and goroutines, and the recorder's shards
// bounded (not one per client).
func TestEveryFamilyRunsOnNull(t *testing.T) {
	if testing.Short() {
		t.Skip("runs for a few seconds")
	}
	for _, fam := range scale.Families {
		t.Run(fam, func(t *testing.T) {
			f, err := scale.Run(context.Background(), &null.DB{}, scale.Step{Family: fam, Clients: 200, Duration: 1500 * time.Millisecond, PerClient: 2})
			if err != nil {
				t.Fatal(err)
			}
			if f.Completed == 0 || f.Errors != 0 || f.Offered != 400 {
				t.Fatalf("%+v: want operations done without errors at 400/s offered", f)
			}
			if f.Client.MaxRSSBytes <= 0 || f.Client.PeakGoroutines < 1 || f.Client.Clients != 200 {
				t.Fatalf("client cost %+v", f.Client)
			}
			if f.Shards > min(2*runtime.GOMAXPROCS(0), 32) {
				t.Fatalf("%d recorder shards for 200 clients", f.Shards)
			}
		})
	}
	if _, err := scale.Run(context.Background(), &null.DB{}, scale.Step{Family: "nosuch", Clients: 1, Duration: time.Second}); err == nil {
		t.Fatal("an unknown family must be refused")
	}
}
