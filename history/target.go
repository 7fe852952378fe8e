package history

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/fieldbench/fieldbench/outpath"
)

// ErrTarget is wrapped by CheckTarget's refusal of an SQLite file that
// cannot be made where it is named: the user's input, so the CLI exits 2.
var ErrTarget = errors.New("the history cannot be made there")

// targetError keeps its error's message and wraps ErrTarget too.
type targetError struct{ error }

func (e targetError) Unwrap() []error { return []error{e.error, ErrTarget} }

// CheckTarget checks the history at target before a command that records
// its runs as they finish (run, sweep, experiment, study --history)
// starts anything: a bad target or one from a newer fieldbench is then
// bad input, not a failure after the run. A new SQLite file is not made
// yet (a refused run leaves nothing), but the nearest directory that
// exists on its way must take a file (outpath.Writable; ErrTarget); an
// existing history must open (Open's errors: ErrNewerSchema...). It lives
// here, not in the CLI, because what a target is and when it opens are
// the history's (issue 45).
func CheckTarget(ctx context.Context, target string) error {
	path, err := SQLitePath(target)
	if err != nil {
		return err
	}
	if path != "" {
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			dir := filepath.Dir(path)
			for ; dir != filepath.Dir(dir); dir = filepath.Dir(dir) {
				if _, err := os.Stat(dir); err == nil {
					break
				}
			}
			if err := outpath.Writable(filepath.Join(dir, "x")); err != nil {
				if errors.Is(err, outpath.ErrUnwritable) {
					// The CLI's message: the flag named twice, as it was.
					err = fmt.Errorf("--history %v", err)
				}
				return targetError{fmt.Errorf("--history %s: cannot make it: %v", path, err)}
			}
			return nil
		}
	}
	s, err := Open(ctx, target, false)
	if err != nil {
		return err
	}
	return s.Close()
}
