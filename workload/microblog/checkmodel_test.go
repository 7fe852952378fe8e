package microblog_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/fieldbench/fieldbench/workload/microblog"
)

// TestCheckModel: an empty database or the same model passes; another
// model wraps ErrModelMismatch and names the adapter and both models.
func TestCheckModel(t *testing.T) {
	for _, tc := range []struct {
		have, want microblog.Model
		refused    bool
	}{
		{"", microblog.Async, false},
		{microblog.Normalized, microblog.Normalized, false},
		{microblog.Normalized, microblog.Denormalized, true},
	} {
		err := microblog.CheckModel("kv", tc.have, tc.want, "keyspace")
		if got := errors.Is(err, microblog.ErrModelMismatch); got != tc.refused || (err != nil) != tc.refused {
			t.Errorf("CheckModel(%q, %q) = %v; want refused %v", tc.have, tc.want, err, tc.refused)
			continue
		}
		if err != nil {
			for _, s := range []string{"kv: ", "the keyspace holds the normalized model", "fresh keyspace", "the denormalized model"} {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("CheckModel error %q does not say %q", err, s)
				}
			}
		}
	}
}

type loaded struct {
	m   microblog.Model
	err error
}

func (l loaded) MicroblogModel(context.Context) (microblog.Model, error) { return l.m, l.err }

// TestCheckLoaded: CheckModel on the model the backend reports, and its
// error when it cannot tell.
func TestCheckLoaded(t *testing.T) {
	ctx := context.Background()
	if err := microblog.CheckLoaded(ctx, loaded{m: microblog.Async}, "kv", microblog.Normalized, "database"); !errors.Is(err, microblog.ErrModelMismatch) {
		t.Errorf("another model loaded: %v; want ErrModelMismatch", err)
	}
	if err := microblog.CheckLoaded(ctx, loaded{}, "kv", microblog.Normalized, "database"); err != nil {
		t.Errorf("nothing loaded: %v", err)
	}
	down := errors.New("down")
	if err := microblog.CheckLoaded(ctx, loaded{err: down}, "kv", microblog.Normalized, "database"); !errors.Is(err, down) {
		t.Errorf("model unreadable: %v; want its error", err)
	}
}
