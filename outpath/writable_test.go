package outpath_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fieldbench/fieldbench/outpath"
)

// Writable refuses a directory, a file in a directory that does not exist
// and one where no file can be made (/proc), each naming the path, and
// leaves nothing behind where it passes: a new file and an existing one.
func TestWritable(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	existing := filepath.Join(dir, "old.html")
	if err := os.WriteFile(existing, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path, want string // want "": passes
	}{
		{filepath.Join(dir, "new.html"), ""},
		{existing, ""},
		{dir, dir + " is a directory, not a file"},
		{filepath.Join(dir, "none", "x.html"), filepath.Join(dir, "none", "x.html") + ": cannot write a file in " + filepath.Join(dir, "none") + ": "},
		{"/proc/x.html", "/proc/x.html: cannot write a file in /proc: "},
	} {
		err := outpath.Writable(c.path)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("Writable(%s): %v, want nil", c.path, err)
		case c.want != "" && (err == nil || !strings.HasPrefix(err.Error(), c.want) || !errors.Is(err, outpath.ErrUnwritable)):
			t.Errorf("Writable(%s): %v, want %q... wrapping ErrUnwritable", c.path, err, c.want)
		}
	}
	left, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 1 || left[0].Name() != "old.html" {
		t.Errorf("left in %s: %v, want old.html alone", dir, left)
	}
}
