package result_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fieldbench/fieldbench/result"
)

// Finding 3 of issue 13: a postgres DSN's ?password= reached result.jsonl
// unmasked. Whatever the caller passes, no password is written: not in the
// DSN, the options, an event, a failed point or an error kind.
func TestWriterRedactsSecrets(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	h := header()
	h.DSN = "postgres://bench@127.0.0.1:5432/db?sslmode=disable&password=s3cretA"
	h.Options = map[string]any{"clients": 2.0, "replica": "postgres://u:s3cretB@127.0.0.1:5433/db",
		"nodes": []any{"mariadb://u:s3cretC@127.0.0.1:3306/db"}, "libpq": "host=h password=s3cretD"}
	w, err := result.Create(dir, h)
	if err != nil {
		t.Fatal(err)
	}
	iv := interval(t, 0, false, 100)
	callerErrs := map[string]int64{"open redis://:s3cretE@127.0.0.1:1: refused": 2, "timeout": 1}
	op := iv.Ops["get"]
	op.Errors = callerErrs
	iv.Ops["get"] = op
	for _, err := range []error{
		w.Interval(iv),
		w.Event(result.Event{At: 1, Name: "kill", Detail: "cannot parse `postgres://u:s3cretF@h/db`"}),
		w.Point(result.Point{Series: "s", X: 1, Failed: "open mysql://u:s3cretG@[::1/x: bad"}),
		w.Close(),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, result.FileName))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "s3cret") {
		t.Errorf("result file holds a password:\n%s", b)
	}
	if _, ok := callerErrs["open redis://:s3cretE@127.0.0.1:1: refused"]; !ok {
		t.Error("the caller's error map was modified")
	}
	run, err := result.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := run.Intervals[0].Ops["get"].Errors["open redis://:xxxxx@127.0.0.1:1: refused"]; got != 2 {
		t.Errorf("redacted error kind counts %d, want 2: %v", got, run.Intervals[0].Ops["get"].Errors)
	}
}
