package ingest

import (
	"bufio"
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
	"time"
)

// CSVStats describe the records WriteCSV wrote, as every workload's
// generate prints its dataset's statistics.
type CSVStats struct {
	Sources    int   `json:"sources"`
	PerSource  int64 `json:"records_per_source"`
	Records    int64 `json:"records"`
	FileBytes  int64 `json:"file_bytes"`  // the CSV, header included
	StudyBytes int64 `json:"study_bytes"` // Records × RecordBytes, the study's accounting
	Channels   int   `json:"channels"`    // distinct channels used (of 64)
	Flagged    int64 `json:"flagged"`     // records with a quality flag (not 0)
	// ValueMin, ValueMean and ValueMax are the measurements' (volts).
	ValueMin, ValueMean, ValueMax float64
	// First and Last are the earliest and latest measured_at.
	First, Last time.Time
}

// Write prints the statistics as a readable block of lines.
func (s CSVStats) Write(w io.Writer) error {
	flagged := 0.0
	if s.Records > 0 {
		flagged = 100 * float64(s.Flagged) / float64(s.Records)
	}
	_, err := fmt.Fprintf(w, `records          %d (%d sources x %d)
study bytes      %d (%d per record, %.1f MB)
csv bytes        %d (%.1f MB)
channels         %d of 64
quality flagged  %d (%.1f %%; 0 = good)
value (V)        mean %.3f, min %.3f, max %.3f
measured_at      %s to %s
`, s.Records, s.Sources, s.PerSource, s.StudyBytes, RecordBytes, float64(s.StudyBytes)/1e6,
		s.FileBytes, float64(s.FileBytes)/1e6, s.Channels, s.Flagged, flagged,
		s.ValueMean, s.ValueMin, s.ValueMax, s.First.Format(time.RFC3339Nano), s.Last.Format(time.RFC3339Nano))
	return err
}

// counter counts the bytes written through it.
type counter struct {
	w io.Writer
	n int64
}

func (c *counter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.n += int64(n)
	return n, err
}

// WriteCSV writes the records sources × records a run inserts (source by
// source, in order) as CSV with a header of the Fields' names, so a native
// bulk loader (psql \copy, LOAD DATA) can load exactly the same rows, and
// returns their statistics. It stops with ctx's error when ctx ends
// (checked every 4096 records).
func WriteCSV(ctx context.Context, w io.Writer, seed int64, sources int, records int64) (CSVStats, error) {
	st := CSVStats{Sources: sources, PerSource: records}
	cnt := &counter{w: w}
	bw := bufio.NewWriterSize(cnt, 1<<20)
	cw := csv.NewWriter(bw)
	head := make([]string, len(Fields))
	for i, f := range Fields {
		head[i] = f.Name
	}
	if err := cw.Write(head); err != nil {
		return st, fmt.Errorf("write csv: %w", err)
	}
	var channels [64]bool
	var sum float64
	row := make([]string, len(Fields))
	for s := 0; s < sources; s++ {
		for i := int64(0); i < records; i++ {
			if i%4096 == 0 && ctx.Err() != nil {
				return st, ctx.Err()
			}
			r := Generate(seed, s, i)
			row[0] = r.ID
			row[1] = strconv.Itoa(int(r.Source))
			row[2] = strconv.Itoa(int(r.Seq))
			row[3] = strconv.Itoa(int(r.Channel))
			row[4] = r.MeasuredAt.Format(time.RFC3339Nano)
			row[5] = r.Tag
			row[6] = strconv.Itoa(int(r.Quality))
			row[7] = strconv.FormatFloat(r.Value, 'g', -1, 64)
			row[8] = r.RecordedAt.Format(time.RFC3339Nano)
			if err := cw.Write(row); err != nil {
				return st, fmt.Errorf("write csv: %w", err)
			}
			if st.Records == 0 || r.Value < st.ValueMin {
				st.ValueMin = r.Value
			}
			if st.Records == 0 || r.Value > st.ValueMax {
				st.ValueMax = r.Value
			}
			if st.Records == 0 || r.MeasuredAt.Before(st.First) {
				st.First = r.MeasuredAt
			}
			if r.MeasuredAt.After(st.Last) {
				st.Last = r.MeasuredAt
			}
			sum += r.Value
			channels[r.Channel&63] = true
			if r.Quality != 0 {
				st.Flagged++
			}
			st.Records++
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return st, fmt.Errorf("write csv: %w", err)
	}
	if err := bw.Flush(); err != nil {
		return st, err
	}
	for _, used := range channels {
		if used {
			st.Channels++
		}
	}
	if st.Records > 0 {
		st.ValueMean = sum / float64(st.Records)
	}
	st.StudyBytes = st.Records * RecordBytes
	st.FileBytes = cnt.n
	return st, nil
}
