package couchdb

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/fieldbench/fieldbench/db/couchdb/couchapi"
	"github.com/fieldbench/fieldbench/workload/trajectory"
)

// Trajectory: CouchDB has no spatial index (GeoCouch was never part of a
// CouchDB release; CouchDB 3's Nouveau/Clouseau search is a separate
// service), so cells are bucketed on a grid of trajGrid-metre squares, as
// the Cassandra and HBase adapters do, and the candidates of a query are
// decided exactly on the client by trajectory.BoxSearch.
//
//   - <prefix>_traj_records: one document per location update (the study's
//     18 attributes).
//   - <prefix>_traj_visits: per Write and (weekday, slot), one document
//     "D:SSSS:unique" holding {cell: visits} of that request's records: the
//     region query reads one _all_docs range with include_docs and sums
//     per cell. (A map/reduce view emitting [weekday, slot, cell] with
//     _count is the textbook way, but pouchdb-server builds a view's index
//     on the first query: over the test's 26,000 records that took more
//     than a minute, so every region query after a write would wait.)
//   - <prefix>_traj_cells: one document per visited cell, its _id
//     "GX:GY:cell:easting:northing" (grid square first, offset to be
//     non-negative, fixed width), with fields gx, gy, cell, e, n.
//
// Two ways to list the cells of a box, chosen by the DSN option spatial=:
//
//   - grid (default): one _all_docs key range per grid column
//     ("GX:GY0:" to "GX:GY1:\ufff0"), keys only: the primary index is the
//     grid, and the cell's position is read from its _id.
//   - mango: one Mango _find with $gte/$lte on gx and gy through a json
//     index on [gx, gy] (CouchDB's query language and its own index).
//
// Both run against pouchdb-server in this package's tests and are checked
// against the oracle there.
const (
	trajRecords    = "traj_records"
	trajCells      = "traj_cells"
	trajVisits     = "traj_visits"
	trajGrid       = 1000 // metres
	trajGridOffset = 1_000_000_000
	trajMaxSquares = 400 // a larger box reads every cell
	trajMangoDDoc  = "fieldbench-grid"
)

func gridOf(v int64) int64 {
	if v < 0 {
		return (v - trajGrid + 1) / trajGrid
	}
	return v / trajGrid
}

func gridKey(g int64) string { return fmt.Sprintf("%010d", g+trajGridOffset) }

type trajRecordDoc struct {
	ID           string  `json:"_id"`
	User         int64   `json:"user"`
	Cell         int64   `json:"cell"`
	Day          int     `json:"day"`
	Slot         int     `json:"slot"`
	Time         int32   `json:"time"`
	Profile      int16   `json:"profile"`
	Segment      int16   `json:"segment"`
	GSM          bool    `json:"gsm"`
	UMTS         bool    `json:"umts"`
	LTE          bool    `json:"lte"`
	Easting      int64   `json:"easting"`
	Northing     int64   `json:"northing"`
	Lat          float64 `json:"lat"`
	Lon          float64 `json:"lon"`
	Municipality string  `json:"municipality"`
	County       string  `json:"county"`
	City         string  `json:"city"`
	Postcode     string  `json:"postcode"`
	Address      string  `json:"address"`
}

type trajVisitDoc struct {
	ID    string           `json:"_id"`
	Cells map[string]int64 `json:"cells"`
}

type trajCellDoc struct {
	ID   string `json:"_id"`
	GX   int64  `json:"gx"`
	GY   int64  `json:"gy"`
	Cell int64  `json:"cell"`
	E    int64  `json:"e"`
	N    int64  `json:"n"`
}

func cellDoc(c *trajectory.Cell) trajCellDoc {
	gx, gy := gridOf(c.Easting), gridOf(c.Northing)
	return trajCellDoc{ID: fmt.Sprintf("%s:%s:%d:%d:%d", gridKey(gx), gridKey(gy), c.ID, c.Easting, c.Northing),
		GX: gx, GY: gy, Cell: c.ID, E: c.Easting, N: c.Northing}
}

// parseCellID reads a cell's id and position back from its _id.
func parseCellID(id string) (trajectory.Hit, error) {
	f := strings.Split(id, ":")
	if len(f) != 5 {
		return trajectory.Hit{}, fmt.Errorf("cell document id %q: want GX:GY:cell:easting:northing", id)
	}
	var v [3]int64
	for i := range v {
		n, err := strconv.ParseInt(f[2+i], 10, 64)
		if err != nil {
			return trajectory.Hit{}, fmt.Errorf("cell document id %q: %w", id, err)
		}
		v[i] = n
	}
	return trajectory.Hit{Cell: v[0], Easting: v[1], Northing: v[2]}, nil
}

type trajStore struct {
	trajectory.BoxSearch
	db     *DB
	prefix string // of record _ids: unique per store
	seq    atomic.Int64
}

var _ trajectory.Store = (*trajStore)(nil)

// Trajectory implements trajectory.Backend: the databases, the region
// view and the Mango index are created when absent.
func (db *DB) Trajectory(ctx context.Context) (trajectory.Store, error) {
	if err := db.trajSchema(ctx); err != nil {
		return nil, err
	}
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, fmt.Errorf("couchdb trajectory: %w", err)
	}
	s := &trajStore{db: db, prefix: hex.EncodeToString(b[:])}
	cells := s.gridCells
	if db.cfg.Spatial == SpatialMango {
		cells = s.mangoCells
	}
	s.BoxSearch = trajectory.BoxSearch{Name: "couchdb trajectory", Cells: cells}
	return s, nil
}

func (db *DB) trajSchema(ctx context.Context) error {
	if err := db.ensure(ctx, trajRecords, trajCells, trajVisits); err != nil {
		return err
	}
	idx := map[string]any{"index": map[string]any{"fields": []string{"gx", "gy"}}, "ddoc": trajMangoDDoc, "name": "grid", "type": "json"}
	if err := db.do(ctx, http.MethodPost, couchapi.Path(db.name(trajCells))+"/_index", nil, idx, nil); err != nil {
		return fmt.Errorf("couchdb trajectory: Mango index on %s: %w", db.name(trajCells), err)
	}
	return nil
}

// Close implements trajectory.Store.
func (s *trajStore) Close() error { return nil }

// Write implements trajectory.Writer: the records and their cells as
// _bulk_docs requests (at most the DSN's batch= documents each, sent
// concurrently); a cell that exists already is kept as it is (its
// document is the same). Write returns when every document was stored.
// It is NOT all or nothing: CouchDB has no multi-document transaction,
// and a failed Write can leave part of its records stored.
func (s *trajStore) Write(ctx context.Context, recs []trajectory.Record) error {
	if len(recs) == 0 {
		return nil
	}
	docs := make([]any, 0, len(recs))
	seen := map[int64]bool{}
	var cells []any
	type daySlot struct{ day, slot int }
	visits := map[daySlot]map[string]int64{}
	for i := range recs {
		r := &recs[i]
		c := r.Cell
		docs = append(docs, trajRecordDoc{ID: s.prefix + "-" + strconv.FormatInt(s.seq.Add(1), 36), User: r.User, Cell: c.ID,
			Day: int(r.Weekday), Slot: r.Slot(), Time: r.Time, Profile: r.Profile, Segment: r.Segment,
			GSM: r.GSM(), UMTS: r.UMTS(), LTE: r.LTE(), Easting: c.Easting, Northing: c.Northing, Lat: c.Lat, Lon: c.Lon,
			Municipality: c.Municipality, County: c.County, City: c.City, Postcode: c.Postcode, Address: c.Address})
		if !seen[c.ID] {
			seen[c.ID] = true
			cells = append(cells, cellDoc(c))
		}
		k := daySlot{int(r.Weekday), r.Slot()}
		if visits[k] == nil {
			visits[k] = map[string]int64{}
		}
		visits[k][strconv.FormatInt(c.ID, 10)]++
	}
	vdocs := make([]any, 0, len(visits))
	for k, v := range visits {
		vdocs = append(vdocs, trajVisitDoc{ID: fmt.Sprintf("%d:%04d:%s-%s", k.day, k.slot, s.prefix, strconv.FormatInt(s.seq.Add(1), 36)), Cells: v})
	}
	if err := s.db.bulkAll(ctx, trajCells, cells, true); err != nil {
		return fmt.Errorf("couchdb trajectory: write %d cells: %w", len(cells), err)
	}
	if err := s.db.bulkAll(ctx, trajRecords, docs, false); err != nil {
		return fmt.Errorf("couchdb trajectory: write %d records: %w", len(recs), err)
	}
	if err := s.db.bulkAll(ctx, trajVisits, vdocs, false); err != nil {
		return fmt.Errorf("couchdb trajectory: write the visits of %d records: %w", len(recs), err)
	}
	return nil
}

// gridCells lists the cells of the grid squares the box touches, one
// _all_docs key range per grid column (keys only).
func (s *trajStore) gridCells(ctx context.Context, minX, minY, maxX, maxY int64) ([]trajectory.Hit, error) {
	gx0, gx1, gy0, gy1 := gridOf(minX), gridOf(maxX), gridOf(minY), gridOf(maxY)
	if (gx1-gx0+1)*(gy1-gy0+1) > trajMaxSquares {
		return s.cellsIn(ctx, url.Values{"startkey": {jsonKey(gridKey(gx0))}, "endkey": {jsonKey(gridKey(gx1) + ":\ufff0")}})
	}
	cols := make([][]trajectory.Hit, gx1-gx0+1)
	err := parallel(ctx, len(cols), 8, func(ctx context.Context, i int) error {
		gx := gridKey(gx0 + int64(i))
		hits, err := s.cellsIn(ctx, url.Values{"startkey": {jsonKey(gx + ":" + gridKey(gy0) + ":")}, "endkey": {jsonKey(gx + ":" + gridKey(gy1) + ":\ufff0")}})
		cols[i] = hits
		return err
	})
	if err != nil {
		return nil, err
	}
	var out []trajectory.Hit
	for _, c := range cols {
		out = append(out, c...)
	}
	return out, nil
}

// cellsIn reads one _all_docs range of the cells database.
func (s *trajStore) cellsIn(ctx context.Context, q url.Values) ([]trajectory.Hit, error) {
	rows, err := s.db.allDocs(ctx, trajCells, q, nil)
	if err != nil {
		return nil, err
	}
	out := make([]trajectory.Hit, 0, len(rows))
	for _, r := range rows {
		if strings.HasPrefix(r.ID, "_design/") {
			continue
		}
		h, err := parseCellID(r.ID)
		if err != nil {
			return nil, err
		}
		out = append(out, h)
	}
	return out, nil
}

// mangoLimit is the _find limit: Mango answers 25 documents unless told.
const mangoLimit = 10_000_000

// mangoCells asks Mango for the cells whose square lies in the box's.
func (s *trajStore) mangoCells(ctx context.Context, minX, minY, maxX, maxY int64) ([]trajectory.Hit, error) {
	q := map[string]any{
		"selector": map[string]any{
			"gx": map[string]int64{"$gte": gridOf(minX), "$lte": gridOf(maxX)},
			"gy": map[string]int64{"$gte": gridOf(minY), "$lte": gridOf(maxY)},
		},
		"fields":    []string{"cell", "e", "n"},
		"use_index": trajMangoDDoc,
		"limit":     mangoLimit,
	}
	var res struct {
		Docs []trajCellDoc `json:"docs"`
	}
	if err := s.db.do(ctx, http.MethodPost, couchapi.Path(s.db.name(trajCells))+"/_find", nil, q, &res); err != nil {
		return nil, err
	}
	out := make([]trajectory.Hit, len(res.Docs))
	for i, d := range res.Docs {
		out[i] = trajectory.Hit{Cell: d.Cell, Easting: d.E, Northing: d.N}
	}
	return out, nil
}

// Region implements trajectory.Querier: the visit documents of [weekday,
// slot] (one _all_docs range), summed per cell; the maximum is picked on
// the client (ties: the smallest cell id).
func (s *trajStore) Region(ctx context.Context, day trajectory.Weekday, slot int) (trajectory.Busiest, bool, error) {
	if err := (trajectory.Query{Op: trajectory.OpRegion, Day: day, Slot: slot}).Validate(); err != nil {
		return trajectory.Busiest{}, false, fmt.Errorf("couchdb trajectory: region: %w", err)
	}
	p := fmt.Sprintf("%d:%04d:", day, slot)
	rows, err := allDocsInto[trajVisitDoc](ctx, s.db, trajVisits, url.Values{"include_docs": {"true"}, "startkey": {jsonKey(p)}, "endkey": {jsonKey(p + "\ufff0")}}, nil)
	if err != nil {
		return trajectory.Busiest{}, false, fmt.Errorf("couchdb trajectory: region: %w", err)
	}
	sum := map[int64]int64{}
	for _, r := range rows {
		if r.Doc == nil {
			continue
		}
		for c, n := range r.Doc.Cells {
			cell, err := strconv.ParseInt(c, 10, 64)
			if err != nil {
				return trajectory.Busiest{}, false, fmt.Errorf("couchdb trajectory: region: %s names cell %q: %w", r.ID, c, err)
			}
			sum[cell] += n
		}
	}
	var best trajectory.Busiest
	found := false
	for cell, n := range sum {
		if n > 0 && (!found || n > best.Visits || (n == best.Visits && cell < best.Cell)) {
			best, found = trajectory.Busiest{Cell: cell, Visits: n}, true
		}
	}
	return best, found, nil
}

// Counts implements trajectory.Store: both databases' doc_count.
func (s *trajStore) Counts(ctx context.Context) (trajectory.Counts, error) {
	var c trajectory.Counts
	var err error
	if c.Records, err = s.db.count(ctx, trajRecords); err != nil {
		return c, fmt.Errorf("couchdb trajectory: counts: %w", err)
	}
	if c.Cells, err = s.db.count(ctx, trajCells); err != nil {
		return c, fmt.Errorf("couchdb trajectory: counts: %w", err)
	}
	return c, nil
}

// Reset implements trajectory.Store: the three databases emptied (see
// DB.drop), the Mango index kept or made again.
func (s *trajStore) Reset(ctx context.Context) error {
	if err := s.db.drop(ctx, trajRecords, trajCells, trajVisits); err != nil {
		return fmt.Errorf("couchdb trajectory: reset: %w", err)
	}
	return s.db.trajSchema(ctx)
}
