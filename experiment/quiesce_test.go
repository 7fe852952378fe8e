package experiment

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// quiesce returns once the database says nothing moves, tolerating a
// failed status in between, and otherwise ends with ctx naming what was
// still moving (not the error the ended context caused).
func TestQuiesce(t *testing.T) {
	type answer struct {
		moving bool
		what   string
		err    error
	}
	for _, tc := range []struct {
		name      string
		answers   []answer // the last one repeats
		wantErr   string   // "" for nil
		wantCalls int      // exact calls to moving when it settles
		wantSaid  []string // what onMoving heard
	}{
		{"quiet at once", []answer{{false, "", nil}}, "", 1, nil},
		{"catches up", []answer{{true, "lines: documents per node 30/12", nil}, {true, "lines: 30/25", nil}, {false, "", nil}}, "", 3,
			[]string{"lines: documents per node 30/12", "lines: 30/25"}},
		{"a failed status is no answer", []answer{{false, "", errors.New("connection refused")}, {false, "", nil}}, "", 2, nil},
		{"never settles", []answer{{true, "cass2: JOINING", nil}}, "(cass2: JOINING)", 0, nil},
		{"never answers", []answer{{false, "", errors.New("connection refused")}}, "could not ask: connection refused", 0, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls := 0
			var said []string
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			moving := func(ctx context.Context) (bool, string, error) {
				a := tc.answers[min(calls, len(tc.answers)-1)]
				calls++
				// Ten calls stand for the limit: the test ends the wait by
				// count, not by a clock.
				if calls == 10 {
					cancel()
				}
				return a.moving, a.what, a.err
			}
			err := quiesce(ctx, time.Millisecond, moving, func(what string) { said = append(said, what) })
			if tc.wantErr == "" {
				if err != nil || calls != tc.wantCalls {
					t.Fatalf("quiesce = %v after %d calls, want nil after %d", err, calls, tc.wantCalls)
				}
				if strings.Join(said, "|") != strings.Join(tc.wantSaid, "|") {
					t.Errorf("onMoving heard %q, want %q", said, tc.wantSaid)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), "still moving") {
				t.Fatalf("quiesce = %v, want an error containing %q", err, tc.wantErr)
			}
		})
	}
}
