package trajectory

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// RecordColumns are the 18 columns of records.csv: the study's attributes in
// its order (Table 1).
var RecordColumns = []string{
	"user_id", "site_id", "weekday", "time", "profile_id", "segment_id",
	"gsm", "umts", "lte", "easting", "northing", "latitude", "longitude",
	"cell_municipality", "cell_county", "cell_city", "cell_postcode", "cell_address",
}

// CellColumns are the columns of cells.csv.
var CellColumns = []string{
	"site_id", "easting", "northing", "latitude", "longitude", "kind", "zone",
	"gsm", "umts", "lte", "municipality", "county", "city", "postcode", "address",
}

// File names WriteCSV writes.
const (
	RecordsFile = "records.csv"
	CellsFile   = "cells.csv"
)

// appendField appends s as one CSV field (RFC 4180: quoted when it holds a
// comma, a quote, a line break or edge spaces).
func appendField(b []byte, s string) []byte {
	if !strings.ContainsAny(s, ",\"\r\n") && strings.TrimSpace(s) == s {
		return append(b, s...)
	}
	b = append(b, '"')
	b = append(b, strings.ReplaceAll(s, `"`, `""`)...)
	return append(b, '"')
}

func appendFlag(b []byte, on bool) []byte {
	if on {
		return append(b, ",1"...)
	}
	return append(b, ",0"...)
}

// cellCSVTail is everything a record's line takes from its cell, computed
// once per cell so that writing a record formats only its own fields.
func cellCSVTail(c *Cell) []byte {
	b := []byte{','}
	b = strconv.AppendInt(b, c.Easting, 10)
	b = append(b, ',')
	b = strconv.AppendInt(b, c.Northing, 10)
	b = append(b, ',')
	b = strconv.AppendFloat(b, c.Lat, 'f', 6, 64)
	b = append(b, ',')
	b = strconv.AppendFloat(b, c.Lon, 'f', 6, 64)
	for _, s := range []string{c.Municipality, c.County, c.City, c.Postcode, c.Address} {
		b = append(b, ',')
		b = appendField(b, s)
	}
	return b
}

// AppendRecordCSV appends r as one line of records.csv (RecordColumns).
func AppendRecordCSV(b []byte, r *Record) []byte {
	b = strconv.AppendInt(b, r.User, 10)
	b = append(b, ',')
	b = strconv.AppendInt(b, r.Cell.ID, 10)
	b = append(b, ',')
	b = append(b, r.Weekday.String()...)
	t := int(r.Time)
	b = append(b, ',', byte('0'+t/36000), byte('0'+t/3600%10), ':',
		byte('0'+t/600%6), byte('0'+t/60%10), ':', byte('0'+t%60/10), byte('0'+t%10), ',')
	b = strconv.AppendInt(b, int64(r.Profile), 10)
	b = append(b, ',')
	b = strconv.AppendInt(b, int64(r.Segment), 10)
	b = appendFlag(b, r.Tech == GSM)
	b = appendFlag(b, r.Tech == UMTS)
	b = appendFlag(b, r.Tech == LTE)
	if r.Cell.csvTail == nil {
		b = append(b, cellCSVTail(r.Cell)...)
	} else {
		b = append(b, r.Cell.csvTail...)
	}
	return append(b, '\n')
}

// WriteCellsCSV writes every cell of the city with a header line
// (CellColumns).
func (c *City) WriteCellsCSV(w io.Writer) error {
	bw := bufio.NewWriter(w)
	b := append([]byte(strings.Join(CellColumns, ",")), '\n')
	for i := range c.Cells {
		cell := &c.Cells[i]
		b = strconv.AppendInt(b, cell.ID, 10)
		b = append(b, ',')
		b = strconv.AppendInt(b, cell.Easting, 10)
		b = append(b, ',')
		b = strconv.AppendInt(b, cell.Northing, 10)
		b = append(b, ',')
		b = strconv.AppendFloat(b, cell.Lat, 'f', 6, 64)
		b = append(b, ',')
		b = strconv.AppendFloat(b, cell.Lon, 'f', 6, 64)
		b = append(b, ',')
		b = append(b, cell.Kind.String()...)
		b = append(b, ',')
		b = appendField(b, c.Zone(i))
		b = appendFlag(b, cell.Supports(GSM))
		b = appendFlag(b, cell.Supports(UMTS))
		b = appendFlag(b, cell.Supports(LTE))
		for _, s := range []string{cell.Municipality, cell.County, cell.City, cell.Postcode, cell.Address} {
			b = append(b, ',')
			b = appendField(b, s)
		}
		b = append(b, '\n')
		if _, err := bw.Write(b); err != nil {
			return err
		}
		b = b[:0]
	}
	return bw.Flush()
}

// csvChunk is how many records one formatting task covers.
const csvChunk = 16384

// WriteRecordsCSV writes every record with a header line and returns the
// bytes written. Chunks are formatted in parallel (one Cursor per
// goroutine, as any range can be made from its indices) and written in
// order, so the output is the same whatever the number of cores.
func (g *Generator) WriteRecordsCSV(ctx context.Context, w io.Writer) (int64, error) {
	header := strings.Join(RecordColumns, ",") + "\n"
	written, err := io.WriteString(w, header)
	total := int64(written)
	if err != nil {
		return total, err
	}
	chunks := (g.n + csvChunk - 1) / csvChunk
	workers := min(runtime.GOMAXPROCS(0), int(max(chunks, 1)))
	type done struct {
		k   int64
		buf *[]byte
	}
	var (
		next    atomic.Int64
		wg      sync.WaitGroup
		pool    = sync.Pool{New: func() any { b := make([]byte, 0, csvChunk*160); return &b }}
		out     = make(chan done, 2*workers)
		tokens  = make(chan struct{}, 2*workers) // bounds chunks held in memory
		stop    = make(chan struct{})
		stopped sync.Once
	)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cur := g.NewCursor()
			recs := make([]Record, csvChunk)
			for {
				select {
				case tokens <- struct{}{}:
				case <-stop:
					return
				}
				k := next.Add(1) - 1
				if k >= chunks {
					<-tokens
					return
				}
				n := cur.Fill(k*csvChunk, recs)
				bp := pool.Get().(*[]byte)
				b := (*bp)[:0]
				for i := range n {
					b = AppendRecordCSV(b, &recs[i])
				}
				*bp = b
				select {
				case out <- done{k, bp}:
				case <-stop:
					return
				}
			}
		}()
	}
	go func() { wg.Wait(); close(out) }()
	halt := func() { stopped.Do(func() { close(stop) }) }
	defer halt()

	pending := map[int64]*[]byte{}
	want := int64(0)
	for d := range out {
		pending[d.k] = d.buf
		for bp, ok := pending[want]; ok; bp, ok = pending[want] {
			delete(pending, want)
			if err == nil {
				err = ctx.Err()
			}
			if err == nil {
				written, err = w.Write(*bp)
				total += int64(written)
			}
			pool.Put(bp)
			<-tokens
			want++
			if err != nil {
				halt()
			}
		}
	}
	if err != nil {
		return total, err
	}
	if want != chunks {
		return total, fmt.Errorf("trajectory: wrote %d of %d chunks", want, chunks)
	}
	return total, nil
}

// CSVStats is what WriteCSV wrote.
type CSVStats struct {
	Records      int64
	Cells        int
	RecordsBytes int64
}

// WriteCSV writes records.csv and cells.csv into dir (created if missing).
func (g *Generator) WriteCSV(ctx context.Context, dir string) (CSVStats, error) {
	st := CSVStats{Records: g.n, Cells: len(g.city.Cells)}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return st, fmt.Errorf("trajectory: create %s: %w", dir, err)
	}
	write := func(name string, fn func(w io.Writer) error) error {
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			return fmt.Errorf("trajectory: %w", err)
		}
		bw := bufio.NewWriterSize(f, 1<<20)
		err = fn(bw)
		if err == nil {
			err = bw.Flush()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("trajectory: write %s: %w", name, err)
		}
		return nil
	}
	err := errors.Join(
		write(CellsFile, g.city.WriteCellsCSV),
		write(RecordsFile, func(w io.Writer) error {
			n, err := g.WriteRecordsCSV(ctx, w)
			st.RecordsBytes = n
			return err
		}),
	)
	return st, err
}
