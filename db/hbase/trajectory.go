package hbase

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/fieldbench/fieldbench/workload/trajectory"
)

// Trajectory tables. HBase has no spatial index, and its one index is the
// sorted row key, so both tables put what a query selects on first:
//
//	traj_records  row day(1) slot(3) cell(16 hex) user(16 hex) time(5):
//	              r:d the record's 18 attributes as its records.csv line
//	traj_cells    row gx(8 hex) gy(8 hex) cell(16 hex): c:p "easting,northing"
//
// The region query (busiest cell at a weekday and slot) is one key-only
// prefix scan of day+slot: the rows come grouped by cell, counted on the
// client (at the study's largest size about 12,900 rows a slot). Each
// record's key is unique — a user has one location update per 5-minute
// slot of the week — so writing a record twice (a retried request) leaves
// one row, not two.
//
// Cells are bucketed on a grid of trajGrid-metre squares, (gx, gy) =
// floor(easting / trajGrid), floor(northing / trajGrid), offset by 2^31 so
// negative coordinates sort too. A spatial query reads the squares its
// bounding box touches with ONE scanner: a MultiRowRangeFilter with one
// key range per grid column (gx, gy0..gy1), which the region servers seek
// between; the candidates are then filtered exactly on the client
// (trajectory.Near: integer planar distance; the closed point-in-triangle
// test). A box of more than trajMaxSquares squares is read as a full scan
// of traj_cells instead (the city has a few hundred cells).
//
// Write puts the records and their cells (each cell once per request) in
// two multi-row puts sent concurrently; it returns when both are
// acknowledged. It is NOT all or nothing: HBase makes a row's put atomic,
// not a batch (a failed Write can leave part of its rows; it returns the
// error). Puts are idempotent, so the write can be retried.
const (
	trajRecords      = "traj_records"
	trajRecordFamily = "r"
	trajCells        = "traj_cells"
	trajCellFamily   = "c"
	trajGrid         = 1000 // metres
	trajMaxSquares   = 400
)

func trajGridOf(v int64) int64 {
	if v < 0 {
		return (v - trajGrid + 1) / trajGrid
	}
	return v / trajGrid
}

// trajSquare is the 16-character key prefix of grid square (gx, gy).
func trajSquare(gx, gy int64) string {
	return fmt.Sprintf("%08x%08x", uint32(gx+1<<31), uint32(gy+1<<31))
}

func trajCellKey(c *trajectory.Cell) string {
	return trajSquare(trajGridOf(c.Easting), trajGridOf(c.Northing)) + hex16(c.ID)
}

// trajSlotPrefix is the 4-character key prefix of a weekday's slot.
func trajSlotPrefix(day trajectory.Weekday, slot int) string {
	return fmt.Sprintf("%d%03d", day, slot)
}

func trajRecordKey(r *trajectory.Record) string {
	return fmt.Sprintf("%s%016x%016x%05d", trajSlotPrefix(r.Weekday, r.Slot()), r.Cell.ID, r.User, r.Time)
}

// trajStore answers distance, k-NN and range through trajectory.BoxSearch
// over its grid buckets (candidates).
type trajStore struct {
	trajectory.BoxSearch
	db *DB
}

var _ trajectory.Store = (*trajStore)(nil)

// Trajectory implements trajectory.Backend, creating the tables when
// absent.
func (db *DB) Trajectory(ctx context.Context) (trajectory.Store, error) {
	if err := db.ensureTable(ctx, trajRecords, trajRecordFamily); err != nil {
		return nil, err
	}
	if err := db.ensureTable(ctx, trajCells, trajCellFamily); err != nil {
		return nil, err
	}
	s := &trajStore{db: db}
	s.BoxSearch = trajectory.BoxSearch{Name: "hbase trajectory", Cells: s.candidates}
	return s, nil
}

// Close implements trajectory.Store.
func (s *trajStore) Close() error { return nil }

// Write implements trajectory.Writer.
func (s *trajStore) Write(ctx context.Context, recs []trajectory.Record) error {
	if len(recs) == 0 {
		return nil
	}
	recCol, cellCol := []byte("r:d"), []byte("c:p")
	rows := make([]row, len(recs))
	var cells []row
	seen := map[int64]bool{}
	var buf []byte
	for i := range recs {
		r := &recs[i]
		start := len(buf)
		buf = trajectory.AppendRecordCSV(buf, r)
		line := buf[start : len(buf)-1 : len(buf)-1] // without the newline
		rows[i] = row{Key: []byte(trajRecordKey(r)), Cells: []cell{{Column: recCol, Value: line}}}
		if c := r.Cell; !seen[c.ID] {
			seen[c.ID] = true
			pos := strconv.FormatInt(c.Easting, 10) + "," + strconv.FormatInt(c.Northing, 10)
			cells = append(cells, row{Key: []byte(trajCellKey(c)), Cells: []cell{{Column: cellCol, Value: []byte(pos)}}})
		}
	}
	var errCells error
	var wg sync.WaitGroup
	wg.Go(func() { errCells = s.db.putRows(ctx, trajCells, cells) })
	errRecs := s.db.putRows(ctx, trajRecords, rows)
	wg.Wait()
	if err := errors.Join(errRecs, errCells); err != nil {
		return fmt.Errorf("hbase trajectory: write %d records: %w", len(recs), err)
	}
	return nil
}

// rowRange is one range of the gateway's MultiRowRangeFilter (keys are
// base64 in JSON, which encoding/json does for []byte).
type rowRange struct {
	Start          []byte `json:"startRow"`
	StartInclusive bool   `json:"startRowInclusive"`
	Stop           []byte `json:"stopRow"`
	StopInclusive  bool   `json:"stopRowInclusive"`
}

// candidates returns the cells in the grid squares that the box touches
// (a superset of the cells inside it), with one scanner.
func (s *trajStore) candidates(ctx context.Context, minX, minY, maxX, maxY int64) ([]trajectory.Hit, error) {
	gx0, gx1, gy0, gy1 := trajGridOf(minX), trajGridOf(maxX), trajGridOf(minY), trajGridOf(maxY)
	spec := scanSpec{Batch: 5000}
	if (gx1-gx0+1)*(gy1-gy0+1) <= trajMaxSquares {
		var ranges []rowRange
		for gx := gx0; gx <= gx1; gx++ {
			ranges = append(ranges, rowRange{Start: []byte(trajSquare(gx, gy0)), StartInclusive: true, Stop: []byte(trajSquare(gx, gy1+1))})
		}
		spec.Start, spec.End = string(ranges[0].Start), string(ranges[len(ranges)-1].Stop)
		f, err := json.Marshal(map[string]any{"type": "MultiRowRangeFilter", "ranges": ranges})
		if err != nil {
			return nil, err
		}
		spec.Filter = string(f)
	}
	var out []trajectory.Hit
	err := s.db.scan(ctx, trajCells, spec, func(r row) error {
		k := string(r.Key)
		if len(k) != 32 {
			return fmt.Errorf("cell row key %q", k)
		}
		id, err := strconv.ParseInt(k[16:], 16, 64)
		if err != nil {
			return fmt.Errorf("cell row key %q: %w", k, err)
		}
		v, _ := r.get("c:p")
		e, n, ok := bytes.Cut(v, []byte{','})
		east, err1 := strconv.ParseInt(string(e), 10, 64)
		north, err2 := strconv.ParseInt(string(n), 10, 64)
		if !ok || err1 != nil || err2 != nil {
			return fmt.Errorf("cell %d position %q", id, v)
		}
		out = append(out, trajectory.Hit{Cell: id, Easting: east, Northing: north})
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Region implements trajectory.Querier: a key-only prefix scan of the
// weekday's slot; rows come grouped by cell id, so the busiest is the
// longest run (ties: the first, the smallest id).
func (s *trajStore) Region(ctx context.Context, day trajectory.Weekday, slot int) (trajectory.Busiest, bool, error) {
	if err := (trajectory.Query{Op: trajectory.OpRegion, Day: day, Slot: slot}).Validate(); err != nil {
		return trajectory.Busiest{}, false, fmt.Errorf("hbase trajectory: region: %w", err)
	}
	prefix := trajSlotPrefix(day, slot)
	var best, cur trajectory.Busiest
	err := s.db.scan(ctx, trajRecords, scanSpec{Start: prefix, End: prefix + "~", Filter: `{"type":"KeyOnlyFilter"}`, Batch: 10000}, func(r row) error {
		k := string(r.Key)
		if len(k) != 4+16+16+5 {
			return fmt.Errorf("record row key %q", k)
		}
		id, err := strconv.ParseInt(k[4:20], 16, 64)
		if err != nil {
			return fmt.Errorf("record row key %q: %w", k, err)
		}
		if cur.Visits > 0 && id != cur.Cell {
			cur = trajectory.Busiest{}
		}
		cur.Cell = id
		cur.Visits++
		if cur.Visits > best.Visits {
			best = cur
		}
		return nil
	})
	if err != nil {
		return trajectory.Busiest{}, false, fmt.Errorf("hbase trajectory: region: %w", err)
	}
	return best, best.Visits > 0, nil
}

// Counts implements trajectory.Store: key-only scans of both tables.
func (s *trajStore) Counts(ctx context.Context) (trajectory.Counts, error) {
	var c trajectory.Counts
	for _, t := range []struct {
		table string
		n     *int64
	}{{trajRecords, &c.Records}, {trajCells, &c.Cells}} {
		err := s.db.scan(ctx, t.table, scanSpec{Filter: `{"type":"FirstKeyOnlyFilter"}`, Batch: 10000}, func(row) error {
			*t.n++
			return nil
		})
		if err != nil {
			return trajectory.Counts{}, fmt.Errorf("hbase trajectory: count %s: %w", t.table, err)
		}
	}
	return c, nil
}

// Reset implements trajectory.Store: drop and recreate both tables.
func (s *trajStore) Reset(ctx context.Context) error {
	if err := s.db.recreate(ctx, trajRecords, trajRecordFamily); err != nil {
		return err
	}
	return s.db.recreate(ctx, trajCells, trajCellFamily)
}
