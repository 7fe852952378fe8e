package ingest

import (
	"bytes"
	"context"
	"encoding/csv"
	"strconv"
	"testing"
	"time"
)

func TestWriteCSVHoldsTheRunsRecords(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	if err := WriteCSV(context.Background(), &b, 7, 2, 3); err != nil {
		t.Fatal(err)
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
