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

// WriteCSV writes the records sources × records a run inserts (source by
// source, in order) as CSV with a header of the Fields' names, so a native
// bulk loader (psql \copy, LOAD DATA) can load exactly the same rows. It
// stops with ctx's error when ctx ends (checked every 4096 records).
func WriteCSV(ctx context.Context, w io.Writer, seed int64, sources int, records int64) error {
	bw := bufio.NewWriterSize(w, 1<<20)
	cw := csv.NewWriter(bw)
	head := make([]string, len(Fields))
	for i, f := range Fields {
		head[i] = f.Name
	}
	if err := cw.Write(head); err != nil {
		return fmt.Errorf("write csv: %w", err)
	}
	row := make([]string, len(Fields))
	for s := 0; s < sources; s++ {
		for i := int64(0); i < records; i++ {
			if i%4096 == 0 && ctx.Err() != nil {
				return ctx.Err()
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
				return fmt.Errorf("write csv: %w", err)
			}
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("write csv: %w", err)
	}
	return bw.Flush()
}
