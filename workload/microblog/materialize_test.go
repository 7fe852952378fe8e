package microblog

import (
	"context"
	"testing"
	"time"
)

// A non-positive interval is an error, not time.NewTicker's panic (issue
// 31, finding 2: `--materialize-every 0s` crashed the run).
func TestMaterializeRefusesNonPositiveInterval(t *testing.T) {
	t.Parallel()
	for _, d := range []time.Duration{0, -time.Second} {
		if err := Materialize(context.Background(), nil, d, nil); err == nil {
			t.Errorf("Materialize with interval %s: no error", d)
		}
	}
}
