package history

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fieldbench/fieldbench/adapter"
)

// CheckTarget passes a history that opens and a new file whose nearest
// existing directory takes one (making nothing), and refuses a file that
// cannot be made there (ErrTarget, the flag named as the CLI printed
// it), a history from a newer fieldbench, a directory and an unknown
// scheme (bad DSNs), before any run.
func TestCheckTarget(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	good := filepath.Join(dir, "good.db")
	newer := filepath.Join(dir, "newer.db")
	for _, p := range []string{good, newer} {
		s, err := Open(ctx, p, true)
		if err != nil {
			t.Fatal(err)
		}
		if p == newer {
			if _, err := s.db.ExecContext(ctx, "UPDATE history_schema SET version = ?", SchemaVersion()+1); err != nil {
				t.Fatal(err)
			}
		}
		s.Close()
	}
	fresh := filepath.Join(dir, "a", "b", "history.db")
	for _, c := range []struct {
		target  string
		wantErr error  // nil: passes
		want    string // the start of its message
	}{
		{good, nil, ""},
		{"sqlite://" + good, nil, ""},
		{fresh, nil, ""},
		{"/proc/fieldbench/history.db", ErrTarget, "--history /proc/fieldbench/history.db: cannot make it: --history /proc/x: cannot write a file in /proc: "},
		{newer, ErrNewerSchema, ""},
		{dir, adapter.ErrBadDSN, "--history " + dir + " is a directory, not a history file"},
		{"mysql://u@h/db", adapter.ErrBadDSN, "--history mysql://u@h/db: a history is an SQLite file"},
	} {
		err := CheckTarget(ctx, c.target)
		switch {
		case c.wantErr == nil && err != nil:
			t.Errorf("%s: %v, want nil", c.target, err)
		case c.wantErr != nil && (!errors.Is(err, c.wantErr) || !strings.HasPrefix(err.Error(), c.want)):
			t.Errorf("%s: %v, want %q... wrapping %v", c.target, err, c.want, c.wantErr)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "a")); err == nil {
		t.Errorf("CheckTarget made %s's directories", fresh)
	}
}
