// Package export writes a run's measurements in the formats other tools
// read: one HdrHistogram interval log per operation (the standard .hlog
// format of HdrHistogram's own log processors), and the summary as CSV and
// JSON. Everything is made from the result file's per-second histograms,
// so an export is exact and can be made again from any result file.
package export

import (
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/fieldbench/fieldbench/result"
)

// unsafeName keeps operation names file-safe.
var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// HDRLogs writes dir/<op>.hlog for every operation of run: one interval
// histogram per measured second (values in µs, tagged with the operation),
// start time and base time the run's start to the millisecond. It returns
// the files written.
func HDRLogs(run *result.Run, dir string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("hdr log directory: %w", err)
	}
	ops := opsOf(run)
	startMs := run.Header.Started.UnixMilli()
	var files []string
	for _, op := range ops {
		path := filepath.Join(dir, unsafeName.ReplaceAllString(op, "_")+".hlog")
		if err := writeLog(path, run, op, startMs); err != nil {
			return files, err
		}
		files = append(files, path)
	}
	return files, nil
}

func writeLog(path string, run *result.Run, op string, startMs int64) (err error) {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("hdr log: %w", err)
	}
	defer func() { err = errors.Join(err, f.Close()) }()
	w := hdrhistogram.NewHistogramLogWriter(f)
	w.SetBaseTime(startMs)
	for _, e := range []error{
		w.OutputLogFormatVersion(),
		w.OutputComment(fmt.Sprintf("fieldbench %s: %s on %s, operation %s, values in microseconds", run.Header.Version, run.Header.Workload, run.Header.Adapter, op)),
		startTime(f, startMs),
		baseTime(f, startMs),
		w.OutputLegend(),
	} {
		if e != nil {
			return fmt.Errorf("hdr log %s: %w", path, e)
		}
	}
	for _, iv := range run.Intervals {
		oi, ok := iv.Ops[op]
		if !ok {
			continue
		}
		h, err := result.DecodeHist(oi.Hist)
		if err != nil {
			return fmt.Errorf("interval at %.0fs, %s: %w", iv.Start, op, err)
		}
		h.SetStartTimeMs(startMs + int64(iv.Start*1000))
		h.SetEndTimeMs(startMs + int64(iv.End*1000))
		h.SetTag(op)
		if err := w.OutputIntervalHistogram(h); err != nil {
			return fmt.Errorf("hdr log %s: %w", path, err)
		}
	}
	return nil
}

// startTime writes the log's #[StartTime: ...] line to the millisecond, as
// HdrHistogram's Java writer does ("%.3f" seconds since the epoch).
// hdrhistogram-go writes whole seconds, which puts every absolute time read
// from the log up to a second early.
func startTime(w io.Writer, ms int64) error {
	_, err := fmt.Fprintf(w, "#[StartTime: %s (seconds since epoch), %s]\n",
		epochSeconds(ms), time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z07:00"))
	return err
}

// baseTime writes the #[BaseTime: ...] line to the millisecond: readers add
// it to every interval's timestamp (which the library's writer makes
// relative to the exact base time set with SetBaseTime).
func baseTime(w io.Writer, ms int64) error {
	_, err := fmt.Fprintf(w, "#[BaseTime: %s (seconds since epoch)]\n", epochSeconds(ms))
	return err
}

// epochSeconds writes ms as seconds with exactly three decimals, in integer
// arithmetic so no float rounding can move it by a millisecond.
func epochSeconds(ms int64) string {
	sign := ""
	if ms < 0 {
		sign, ms = "-", -ms
	}
	return fmt.Sprintf("%s%d.%03d", sign, ms/1000, ms%1000)
}

func opsOf(run *result.Run) []string {
	set := map[string]bool{}
	for _, op := range run.Header.Operations {
		set[op] = true
	}
	for _, iv := range run.Intervals {
		for op := range iv.Ops {
			set[op] = true
		}
	}
	out := make([]string, 0, len(set))
	for op := range set {
		out = append(out, op)
	}
	sort.Strings(out)
	return out
}

// summaryOf is the run's summary, recomputed from its intervals when the
// file has none (a killed run).
func summaryOf(run *result.Run) (result.Summary, error) {
	if run.Summary != nil {
		return *run.Summary, nil
	}
	return run.Summarize()
}

// CSVHeader are the columns of SummaryCSV.
var CSVHeader = []string{"workload", "adapter", "operation", "count", "errors", "ops_per_sec", "mean_us", "p50_us", "p90_us", "p99_us", "p999_us", "max_us", "duration_s"}

// SummaryCSV writes one row per operation.
func SummaryCSV(w io.Writer, run *result.Run) error {
	sum, err := summaryOf(run)
	if err != nil {
		return err
	}
	cw := csv.NewWriter(w)
	if err := cw.Write(CSVHeader); err != nil {
		return err
	}
	ops := make([]string, 0, len(sum.Ops))
	for op := range sum.Ops {
		ops = append(ops, op)
	}
	sort.Strings(ops)
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	i := func(v int64) string { return strconv.FormatInt(v, 10) }
	for _, op := range ops {
		o := sum.Ops[op]
		var errs int64
		for _, n := range o.Errors {
			errs += n
		}
		if err := cw.Write([]string{run.Header.Workload, run.Header.Adapter, op, i(o.Count), i(errs), f(o.OpsPerSec), f(o.MeanUS),
			i(o.P50US), i(o.P90US), i(o.P99US), i(o.P999US), i(o.MaxUS), f(sum.DurationSeconds)}); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// JSONSummary is what SummaryJSON writes: who ran what, and the summary.
type JSONSummary struct {
	Workload string              `json:"workload"`
	Adapter  string              `json:"adapter"`
	Database string              `json:"database"`
	Version  string              `json:"database_version"`
	Started  string              `json:"started"`
	Options  map[string]any      `json:"options,omitempty"`
	Summary  result.Summary      `json:"summary"`
	Cluster  *result.ClusterInfo `json:"cluster,omitempty"`
}

// SummaryJSON writes the run's summary as one JSON document.
func SummaryJSON(w io.Writer, run *result.Run) error {
	sum, err := summaryOf(run)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	h := run.Header
	return enc.Encode(JSONSummary{Workload: h.Workload, Adapter: h.Adapter, Database: h.Database.Name, Version: h.Database.Version,
		Started: h.Started.Format("2006-01-02T15:04:05.000Z07:00"), Options: h.Options, Summary: sum, Cluster: h.Cluster})
}

// WriteFile writes to path with fn via a temporary file in its directory.
func WriteFile(path string, fn func(io.Writer) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".export-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if err := fn(tmp); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	_ = os.Chmod(tmp.Name(), 0o644)
	return os.Rename(tmp.Name(), path)
}
