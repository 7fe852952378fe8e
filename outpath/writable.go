package outpath

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// ErrUnwritable is wrapped by Writable's refusals.
var ErrUnwritable = errors.New("output file cannot be written")

// unwritable keeps its error's message and wraps ErrUnwritable too.
type unwritable struct{ error }

func (e unwritable) Unwrap() []error { return []error{e.error, ErrUnwritable} }

// Writable refuses an output file that cannot be written: a directory, or
// one in a directory that does not exist or takes no new file (/proc),
// which it finds by making a file there and removing it. It is asked
// before any work, as Output is, so a bad --out costs nothing (the CLI's
// exit 2, not a failure after the work); it lives here, not in the CLI,
// because the history's --history check asks it too (issue 45). Its
// refusals name path and wrap ErrUnwritable; a failure to remove the file
// it made is returned as it is.
func Writable(path string) error {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return unwritable{fmt.Errorf("%s is a directory, not a file", path)}
	}
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, ".fieldbench-check-*")
	if err != nil {
		return unwritable{fmt.Errorf("%s: cannot write a file in %s: %v", path, dir, err)}
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}
