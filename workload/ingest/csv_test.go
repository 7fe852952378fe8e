package ingest

import (
	"bytes"
	"context"
	"encoding/csv"
	"math"
	"strconv"
	"testing"
	"time"
)

func TestWriteCSVHoldsTheRunsRecords(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	st, err := WriteCSV(context.Background(), &b, 7, 2, 3)
	if err != nil {
		t.Fatal(err)
	}
	if st.Records != 6 || st.FileBytes != int64(b.Len()) {
		t.Errorf("stats say %d records in %d bytes; the file: 6 in %d", st.Records, st.FileBytes, b.Len())
	}
	rows, err := csv.NewReader(&b).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1+2*3 || rows[0][0] != "id" || rows[0][8] != "recorded_at" {
		t.Fatalf("%d rows, header %v", len(rows), rows[0])
	}
	for i, row := range rows[1:] {
		want := Generate(7, i/3, int64(i%3))
		at, err := time.Parse(time.RFC3339Nano, row[4])
		v, _ := strconv.ParseFloat(row[7], 64)
		if err != nil || row[0] != want.ID || row[5] != want.Tag || !at.Equal(want.MeasuredAt) || v != want.Value {
			t.Fatalf("row %d = %v, want %+v", i, row, want)
		}
	}
}

// The statistics WriteCSV returns are the file's, recomputed from its rows.
func TestWriteCSVStats(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	st, err := WriteCSV(context.Background(), &b, 3, 4, 250)
	if err != nil {
		t.Fatal(err)
	}
	size := int64(b.Len())
	rows, err := csv.NewReader(&b).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	want := CSVStats{Sources: 4, PerSource: 250, Records: int64(len(rows) - 1), FileBytes: size, StudyBytes: int64(len(rows)-1) * RecordBytes}
	channels := map[string]bool{}
	sum := 0.0
	for i, row := range rows[1:] {
		channels[row[3]] = true
		if row[6] != "0" {
			want.Flagged++
		}
		v, _ := strconv.ParseFloat(row[7], 64)
		at, err := time.Parse(time.RFC3339Nano, row[4])
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 || v < want.ValueMin {
			want.ValueMin = v
		}
		if i == 0 || v > want.ValueMax {
			want.ValueMax = v
		}
		if i == 0 || at.Before(want.First) {
			want.First = at
		}
		if at.After(want.Last) {
			want.Last = at
		}
		sum += v
	}
	want.Channels = len(channels)
	want.ValueMean = sum / float64(want.Records)
	if math.Abs(st.ValueMean-want.ValueMean) > 1e-9 {
		t.Errorf("mean %v, the file's %v", st.ValueMean, want.ValueMean)
	}
	st.ValueMean = want.ValueMean
	if !st.First.Equal(want.First) || !st.Last.Equal(want.Last) {
		t.Errorf("measured_at %v..%v, the file's %v..%v", st.First, st.Last, want.First, want.Last)
	}
	st.First, st.Last = want.First, want.Last
	if st != want {
		t.Errorf("stats\n%+v\nthe file's\n%+v", st, want)
	}
	if st.Flagged == 0 || st.Channels < 2 {
		t.Errorf("a degenerate sample: %+v", st)
	}
}
