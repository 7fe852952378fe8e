package result

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sync"

	"github.com/fieldbench/fieldbench/redact"
)

// Writer appends lines to a result file. It is safe for concurrent use.
type Writer struct {
	mu   sync.Mutex
	f    *os.File
	path string
}

// Create creates dir (and parents) and the result file inside it, and writes
// the header line.
func Create(dir string, h Header) (*Writer, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create result directory: %w", err)
	}
	path := filepath.Join(dir, FileName)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("create result file: %w", err)
	}
	w := &Writer{f: f, path: path}
	h.DSN = redact.DSN(h.DSN)
	h.Options = redactOptions(h.Options)
	if err := w.write(Line{Kind: "header", Header: &h}); err != nil {
		f.Close()
		return nil, err
	}
	return w, nil
}

// Path is the result file's path.
func (w *Writer) Path() string { return w.path }

// Interval appends one interval. Error kinds are redacted (a driver's
// message may quote a DSN).
func (w *Writer) Interval(iv Interval) error {
	iv.Ops = redactOps(iv.Ops, func(o *OpInterval) *map[string]int64 { return &o.Errors })
	return w.write(Line{Kind: "interval", Interval: &iv})
}

// Event appends one event, its detail redacted.
func (w *Writer) Event(e Event) error {
	e.Detail = redact.Text(e.Detail)
	return w.write(Line{Kind: "event", Event: &e})
}

// Point appends one point, its failure cause redacted.
func (w *Writer) Point(p Point) error {
	p.Failed = redact.Text(p.Failed)
	return w.write(Line{Kind: "point", Point: &p})
}

// Summary appends the summary, its error kinds redacted.
func (w *Writer) Summary(s Summary) error {
	s.Ops = redactOps(s.Ops, func(o *OpSummary) *map[string]int64 { return &o.Errors })
	s.Extra = finiteExtra(s.Extra)
	return w.write(Line{Kind: "summary", Summary: &s})
}

// finiteExtra returns extra without its NaN and ±Inf figures (a figure
// that could not be computed), which JSON cannot encode: one would cost the
// summary line. extra itself when every figure is finite.
func finiteExtra(extra map[string]float64) map[string]float64 {
	for _, v := range extra {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			out := make(map[string]float64, len(extra))
			for k, v := range extra {
				if !math.IsNaN(v) && !math.IsInf(v, 0) {
					out[k] = v
				}
			}
			return out
		}
	}
	return extra
}

// redactOps returns ops with every operation's error kinds (reached by
// errs) redacted: ops itself when nothing changes, else a copy, so the
// caller's maps stay as they were.
func redactOps[T any](ops map[string]T, errs func(*T) *map[string]int64) map[string]T {
	var out map[string]T
	for name, op := range ops {
		red, changed := redactKinds(*errs(&op))
		if !changed {
			continue
		}
		if out == nil {
			out = make(map[string]T, len(ops))
			for k, v := range ops {
				out[k] = v
			}
		}
		*errs(&op) = red
		out[name] = op
	}
	if out == nil {
		return ops
	}
	return out
}

// redactKinds returns errs with every kind redacted, and whether any
// changed (errs itself is never modified).
func redactKinds(errs map[string]int64) (map[string]int64, bool) {
	changed := false
	for k := range errs {
		if redact.Text(k) != k {
			changed = true
			break
		}
	}
	if !changed {
		return errs, false
	}
	out := make(map[string]int64, len(errs))
	for k, n := range errs {
		out[redact.Text(k)] += n
	}
	return out, true
}

// redactOptions copies opts with every string (nested in lists and maps
// too) redacted as free text: an option may hold a DSN (a replica's, a
// scenario's database).
func redactOptions(opts map[string]any) map[string]any {
	if opts == nil {
		return nil
	}
	out := make(map[string]any, len(opts))
	for k, v := range opts {
		out[k] = redactValue(v)
	}
	return out
}

func redactValue(v any) any {
	switch v := v.(type) {
	case string:
		return redact.Text(v)
	case []string:
		out := make([]string, len(v))
		for i, s := range v {
			out[i] = redact.Text(s)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = redactValue(e)
		}
		return out
	case map[string]any:
		return redactOptions(v)
	case map[string]string:
		out := make(map[string]string, len(v))
		for k, s := range v {
			out[k] = redact.Text(s)
		}
		return out
	case float64:
		// JSON has no NaN or Inf: written as a number, the header line
		// would fail to encode and the whole result file would be lost.
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Sprint(v)
		}
		return v
	default:
		return v
	}
}

// Close syncs and closes the file.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f == nil {
		return nil
	}
	serr := w.f.Sync()
	cerr := w.f.Close()
	w.f = nil
	return errors.Join(serr, cerr)
}

// write marshals l and appends it with one write call: the kernel keeps it
// even if the process is killed right after.
func (w *Writer) write(l Line) error {
	b, err := json.Marshal(l)
	if err != nil {
		return fmt.Errorf("encode result line: %w", err)
	}
	b = append(b, '\n')
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f == nil {
		return errors.New("result file already closed")
	}
	if _, err := w.f.Write(b); err != nil {
		return fmt.Errorf("write result file %s: %w", w.path, err)
	}
	return nil
}

// Run is a result file read back.
type Run struct {
	Dir       string
	Header    Header
	Intervals []Interval
	Events    []Event
	Points    []Point
	Summary   *Summary // nil when the run was killed before writing it
	// Truncated is set when the last line was cut off mid-write.
	Truncated bool
	// Path is the file read ("" when decoded from a reader).
	Path string
	// Skipped are the lines that could not be read and were passed over:
	// a damaged file is read as far as it goes, and every reader says
	// which lines it lost (Warnings).
	Skipped []SkippedLine
}

// SkippedLine is one line of a result file that was not read.
type SkippedLine struct {
	Line   int    // 1-based
	Reason string // why: the parser's message, or "cut off"
}

// maxWarnings bounds the lines Warnings names one by one: a file of
// garbage is one message, not a screenful.
const maxWarnings = 10

// Warnings words Skipped for the terminal, each line as FILE:LINE so an
// editor jumps to it; empty when every line was read.
func (r *Run) Warnings() []string {
	if len(r.Skipped) == 0 {
		return nil
	}
	name := r.Path
	if name == "" {
		name = FileName
	}
	var out []string
	for i, sk := range r.Skipped {
		if i == maxWarnings {
			out = append(out, fmt.Sprintf("%s: %d more damaged lines skipped", name, len(r.Skipped)-maxWarnings))
			break
		}
		out = append(out, fmt.Sprintf("%s:%d: skipped a damaged line (%s); the rest of the file was read", name, sk.Line, sk.Reason))
	}
	return out
}

// Read reads the result file in dir (or dir itself when it names a file).
func Read(dir string) (*Run, error) { return ReadContext(context.Background(), dir) }

// ReadContext is Read that stops, with ctx's error, once ctx is done: a
// large file is not read to its end after Ctrl-C. What was given is named
// in every error: a path that does not exist, one that is no regular file
// (a device or a pipe is not a result file, and /dev/zero would never
// end), and a file that is no result file.
func ReadContext(ctx context.Context, dir string) (*Run, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("read result: %w", err)
	}
	path := dir
	switch {
	case st.IsDir():
		path = filepath.Join(dir, FileName)
	case !st.Mode().IsRegular():
		return nil, fmt.Errorf("read result: %s is %s, not a file: give a run directory or its %s", dir, fileKind(st.Mode()), FileName)
	default:
		dir = filepath.Dir(dir)
	}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) && st.IsDir() {
		// A run directory is made before its result file: a run stopped
		// while loading leaves one without it.
		return nil, fmt.Errorf("read result: no %s in %s: not a run directory, or an incomplete run stopped before it started measuring: %w", FileName, dir, err)
	}
	if err != nil {
		return nil, fmt.Errorf("read result: %w", err)
	}
	defer f.Close()
	run, err := DecodeContext(ctx, f)
	if err != nil {
		return nil, fmt.Errorf("read result %s: %w", path, err)
	}
	run.Dir, run.Path = dir, path
	return run, nil
}

// ErrNoHeader is the error for a result file that is empty or whose only
// line, the header, was cut off: the run was killed as it started.
var ErrNoHeader = errors.New("incomplete result: the run was stopped before its header line was written; nothing was measured")

// Decode parses a result file as far as it goes. A line that does not
// parse, or parses as no known kind of line, is skipped and listed in
// Skipped, so one damaged line costs that line and not the run; a final line
// without a newline that does not parse is taken as cut off by a kill
// (Truncated is set, and it is listed too). Only a file without a readable
// header is refused: without it nothing else can be read.
//
// A second header is no damaged line: it is another run's file joined to
// this one (cat a b > c), whose intervals would be taken for this run's.
// It is refused (ErrSecondHeader), with its line.
func Decode(r io.Reader) (*Run, error) { return DecodeContext(context.Background(), r) }

// ErrSecondHeader is the error of a result file holding two runs.
var ErrSecondHeader = errors.New("a second header: two runs' result files joined into one; each run has a file of its own (split the file there, or read each run's own)")

// DecodeContext is Decode that stops with ctx's error once ctx is done.
func DecodeContext(ctx context.Context, r io.Reader) (*Run, error) {
	br := bufio.NewReaderSize(ctxReader{ctx, r}, 1<<20)
	run := &Run{}
	sawHeader := false
	lines := 0
	for lineNo := 1; ; lineNo++ {
		b, err := br.ReadBytes('\n')
		if len(b) == 0 && err == io.EOF {
			break
		}
		lines++
		if err != nil && err != io.EOF {
			return nil, err
		}
		var l Line
		if jerr := json.Unmarshal(b, &l); jerr != nil {
			reason := jerr.Error()
			if err == io.EOF { // last line, no newline: cut off by a kill
				run.Truncated = true
				reason = "cut off: the run was stopped while writing it"
			}
			run.Skipped = append(run.Skipped, SkippedLine{Line: lineNo, Reason: reason})
			if err == io.EOF {
				break
			}
			continue
		}
		switch {
		case l.Kind == "header" && l.Header != nil && sawHeader:
			return nil, fmt.Errorf("line %d is %w", lineNo, ErrSecondHeader)
		case l.Kind == "header" && l.Header != nil:
			run.Header = *l.Header
			sawHeader = true
		case l.Kind == "interval" && l.Interval != nil:
			run.Intervals = append(run.Intervals, *l.Interval)
		case l.Kind == "event" && l.Event != nil:
			run.Events = append(run.Events, *l.Event)
		case l.Kind == "point" && l.Point != nil:
			run.Points = append(run.Points, *l.Point)
		case l.Kind == "summary" && l.Summary != nil:
			run.Summary = l.Summary
		default:
			run.Skipped = append(run.Skipped, SkippedLine{Line: lineNo, Reason: fmt.Sprintf("unknown kind %q or no content", l.Kind)})
		}
		if err == io.EOF {
			break
		}
	}
	if !sawHeader {
		switch {
		case lines == 0 || run.Truncated && lines == 1:
			return nil, ErrNoHeader
		case len(run.Skipped) > 0 && run.Skipped[0].Line == 1:
			return nil, fmt.Errorf("line 1 is no header (%s): not a fieldbench result file, or its header line is damaged and nothing can be read without it", run.Skipped[0].Reason)
		}
		return nil, errors.New("no header line: not a fieldbench result file")
	}
	return run, nil
}

// ctxReader reads from r until ctx is done, then fails with ctx's error.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// fileKind words a mode that is neither a directory nor a regular file.
func fileKind(m fs.FileMode) string {
	switch {
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	}
	return "no regular file"
}
