package job

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"golang.org/x/term"

	"github.com/fieldbench/fieldbench/recorder"
	"github.com/fieldbench/fieldbench/runner"
)

// progress prints one live line while a run goes on. On a terminal the line
// is rewritten in place every second; otherwise (CI logs, files) a line is
// printed every 10 seconds of the run's clock so logs stay short — except
// during an outage: every second in which the database is down is printed
// and says so (issue 31: a run whose server was stopped printed nothing
// for 9 s), and so is the first second after it.
type progress struct {
	w       io.Writer
	tty     bool
	total   time.Duration
	ops     []string
	every   runner.Cadence
	errors  int64
	printed bool
	wasDown bool // the last interval shown was during an outage
}

func newProgress(w io.Writer, total time.Duration, ops []string) *progress {
	tty := false
	if f, ok := w.(*os.File); ok {
		tty = term.IsTerminal(int(f.Fd()))
	}
	return &progress{w: w, tty: tty, total: total, ops: ops, every: runner.Cadence{Every: 10 * time.Second}}
}

// update shows snapshot s; down says the database is down (see outage).
func (p *progress) update(s recorder.Snapshot, down bool) {
	var n, failed int64
	for i := range p.ops {
		n += s.Hists[i].TotalCount()
		for _, e := range s.Errors[i] {
			failed += e
		}
	}
	p.errors += failed
	secs := (s.End - s.Start).Seconds()
	if secs <= 0 {
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s", s.End.Round(time.Second))
	if p.total > 0 {
		fmt.Fprintf(&b, "/%s", p.total)
	}
	fmt.Fprintf(&b, "  %.0f ops/s  errors %d", float64(n)/secs, p.errors)
	for i, op := range p.ops {
		h := s.Hists[i]
		if h.TotalCount() == 0 {
			continue
		}
		fmt.Fprintf(&b, " | %s p50 %s p99 %s", op, fmtUS(h.ValueAtQuantile(50)), fmtUS(h.ValueAtQuantile(99)))
	}
	if s.Late != nil && s.Late.TotalCount() > 0 {
		fmt.Fprintf(&b, " | late p99 %s", fmtUS(s.Late.ValueAtQuantile(99)))
	}
	switch {
	case down && n == 0:
		fmt.Fprintf(&b, " | DATABASE UNREACHABLE: no operation succeeded (%d errors this second)", failed)
	case down:
		b.WriteString(" | DATABASE UNREACHABLE: its dials fail")
	}
	due := p.every.Due(s.End) // called every interval: it keeps the cadence
	switch {
	case p.tty:
		fmt.Fprintf(p.w, "\r\033[K%s", b.String())
		p.printed = true
	case due || down || p.wasDown:
		fmt.Fprintln(p.w, b.String())
	}
	p.wasDown = down
}

// done ends the live line.
func (p *progress) done() {
	if p.tty && p.printed {
		fmt.Fprintln(p.w)
	}
}

func fmtUS(us int64) string {
	switch {
	case us >= 1_000_000:
		return fmt.Sprintf("%.2fs", float64(us)/1e6)
	case us >= 1000:
		return fmt.Sprintf("%.1fms", float64(us)/1000)
	}
	return fmt.Sprintf("%dµs", us)
}
