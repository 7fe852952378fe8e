package job

import (
	"errors"
	"fmt"
)

// UsageError marks bad input (an option, a DSN, a database holding another
// dataset): the CLI exits with its usage code for it, and an experiment
// reports it before anything starts where it can.
type UsageError struct{ Err error }

func (e UsageError) Error() string { return e.Err.Error() }
func (e UsageError) Unwrap() error { return e.Err }

// Usagef is a UsageError with a formatted message.
func Usagef(format string, a ...any) error { return UsageError{fmt.Errorf(format, a...)} }

// Usage marks err as bad input (nil stays nil).
func Usage(err error) error {
	if err == nil {
		return nil
	}
	return UsageError{err}
}

// IsUsage reports whether err is, or wraps, bad input.
func IsUsage(err error) bool {
	var ue UsageError
	return errors.As(err, &ue)
}

// ErrInterrupted is returned by a job stopped by its context after it saved
// what it had measured.
var ErrInterrupted = errors.New("interrupted")
