package adapter_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/fieldbench/fieldbench/adapter"
	_ "github.com/fieldbench/fieldbench/db/all"
	"github.com/fieldbench/fieldbench/redact"
	"github.com/fieldbench/fieldbench/workload"
)

func TestForDSNUnknownScheme(t *testing.T) {
	t.Parallel()
	for _, dsn := range []string{"nosuchdb://x", "no-scheme", "://x"} {
		if _, err := adapter.ForDSN(dsn); err == nil {
			t.Errorf("ForDSN(%q) must fail", dsn)
		}
	}
}

// Every registered adapter lists at least one family, and only families
// that are registered workloads.
func TestFamiliesAreRegisteredWorkloads(t *testing.T) {
	t.Parallel()
	for _, a := range adapter.Registered() {
		fams := a.Families()
		if len(fams) == 0 {
			t.Errorf("adapter %s supports no family", a.Name())
		}
		for _, f := range fams {
			if _, err := workload.Get(f); err != nil {
				t.Errorf("adapter %s lists %q: %v", a.Name(), f, err)
			}
		}
	}
}

// famDB is a DB with no family; famInfo adds one method set to it.
type famDB struct{}

func (famDB) Info(context.Context) (adapter.Info, error) { return adapter.Info{}, nil }
func (famDB) Close() error                               { return nil }

type pinger interface{ Ping() string }

type famPinger struct{ famDB }

func (famPinger) Ping() string { return "pong" }

// TestFamily: a DB lacking the family's Backend is refused with an error
// wrapping ErrUnsupported that names the family and the redacted DSN; one
// implementing it is returned as it.
func TestFamily(t *testing.T) {
	t.Parallel()
	dsn := "redis://user:secret@host:6379/0"
	_, err := adapter.Family[pinger](famDB{}, dsn, "ping")
	if !errors.Is(err, adapter.ErrUnsupported) {
		t.Fatalf("Family of a DB without the family: %v; want ErrUnsupported", err)
	}
	want := "the adapter for " + redact.DSN(dsn) + " does not support the ping workload"
	if err.Error() != want || strings.Contains(err.Error(), "secret") {
		t.Errorf("Family error %q; want %q", err, want)
	}
	p, err := adapter.Family[pinger](famPinger{}, dsn, "ping")
	if err != nil || p.Ping() != "pong" {
		t.Errorf("Family of a DB with the family: %v, %v", p, err)
	}
}
