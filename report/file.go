package report

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/fieldbench/fieldbench/report/export"
	"github.com/fieldbench/fieldbench/result"
)

// WriteFile renders runs as HTML to path via a temporary file, so a failure
// never leaves half a report behind.
func WriteFile(path string, runs []*result.Run) error {
	err := writeThrough(path, ".report-*.html", func(w io.Writer) error { return HTML(w, runs) })
	var re renderError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &re):
		return fmt.Errorf("render report: %w", re.error)
	}
	return fmt.Errorf("write report %s: %w", path, err)
}

// WriteTrendFile writes the trend page (TrendHTML) to path the same way:
// a failure leaves no half page. Its errors are the file system's (or the
// page's) as they are.
func WriteTrendFile(path string, t Trend) error {
	err := writeThrough(path, ".trend-*.html", func(w io.Writer) error { return TrendHTML(w, t) })
	var re renderError
	if errors.As(err, &re) {
		return re.error
	}
	return err
}

// renderError is writeThrough's error from rendering, not from the file:
// WriteFile words the two differently.
type renderError struct{ error }

func (e renderError) Unwrap() error { return e.error }

// writeThrough writes what render makes to a temporary file beside path
// (pattern as os.CreateTemp's) and renames it to path once whole, readable
// by all (CreateTemp makes 0600; a report is for sharing).
func writeThrough(path, pattern string, render func(io.Writer) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), pattern)
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	_ = tmp.Chmod(0o644)
	if err := render(tmp); err != nil {
		tmp.Close()
		return renderError{err}
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// WarnSkipped prints on w, one per line, the lines of r's result file that
// were damaged and skipped (FILE:LINE first, as a compiler's message): no
// command reads a damaged file without a word.
func WarnSkipped(w io.Writer, r *result.Run) {
	for _, msg := range r.Warnings() {
		fmt.Fprintf(w, "fieldbench: warning: %s\n", msg)
	}
}

// WriteFileContext renders runs to path (`fieldbench report`) through a
// temporary file, and puts it in place only if ctx is not done by then:
// an interrupted report leaves no new page, and the old one as it was.
// The render (HTML) takes no context and is CPU work over every
// interval's histograms (40 s for 6,000 intervals on a loaded machine), so
// it runs on its own goroutine and is abandoned on Ctrl-C: the command
// returns at once, and what the render makes in memory is never written.
func WriteFileContext(ctx context.Context, path string, runs []*result.Run) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	type rendered struct {
		page []byte
		err  error
	}
	done := make(chan rendered, 1)
	go func() {
		var b bytes.Buffer
		err := HTML(&b, runs)
		done <- rendered{b.Bytes(), err}
	}()
	var r rendered
	select {
	case r = <-done:
	case <-ctx.Done():
		return ctx.Err()
	}
	if r.err != nil {
		return fmt.Errorf("render report: %w", r.err)
	}
	return export.WriteFile(path, func(w io.Writer) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		_, err := w.Write(r.page)
		return err
	})
}
