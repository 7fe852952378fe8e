package cassandra

import (
	"context"
	"fmt"
	"sync"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/fieldbench/fieldbench/workload/trajectory"
)

// Trajectory tables. Cassandra has no spatial index (SASI and SAI index
// single columns, not distances or polygons), so the cells are bucketed on
// a grid of trajGrid-metre squares: one partition per square, keyed
// (gx, gy) = floor(easting / trajGrid), floor(northing / trajGrid). A
// spatial query reads the squares its bounding box touches (one query per
// grid column, gy IN (...)) and filters the candidates exactly on the
// client: planar distance in integer square metres, closed
// point-in-triangle. A box of more than trajMaxSquares squares is read as
// a full scan of the cells table instead.
//
// Records keep the study's 18 attributes, one partition per user; the
// region query reads a counter table, one partition per (weekday, slot).
var trajTables = []string{
	`traj_records (user bigint, rid timeuuid, cell bigint, day int, time int, profile int, segment int,
		gsm boolean, umts boolean, lte boolean, easting bigint, northing bigint, lat double, lon double,
		municipality text, county text, city text, postcode text, address text, PRIMARY KEY (user, rid))`,
	"traj_cells (gx bigint, gy bigint, cell bigint, easting bigint, northing bigint, PRIMARY KEY ((gx, gy), cell))",
	"traj_region (day int, slot int, cell bigint, visits counter, PRIMARY KEY ((day, slot), cell))",
}

const (
	trajGrid       = 1000 // metres
	trajMaxSquares = 400
)

func gridOf(v int64) int64 {
	if v < 0 {
		return (v - trajGrid + 1) / trajGrid
	}
	return v / trajGrid
}

// trajStore answers distance, k-NN and range through trajectory.BoxSearch
// over its grid buckets (candidates).
type trajStore struct {
	trajectory.BoxSearch
	db *DB
}

var _ trajectory.Store = (*trajStore)(nil)

// Trajectory implements trajectory.Backend.
func (db *DB) Trajectory(ctx context.Context) (trajectory.Store, error) {
	if err := db.createTables(ctx, trajTables...); err != nil {
		return nil, err
	}
	s := &trajStore{db: db}
	s.BoxSearch = trajectory.BoxSearch{Name: "cassandra trajectory", Cells: s.candidates}
	return s, nil
}

// Close implements trajectory.Store.
func (s *trajStore) Close() error { return nil }

// Write implements trajectory.Writer: records grouped by user partition,
// cells by grid square and visit counts by (weekday, slot), each group one
// single-partition batch (counters in COUNTER batches), all sent
// concurrently; Write returns when every batch was acknowledged. It is
// NOT all or nothing across partitions: Cassandra has no multi-partition
// transaction, and a logged batch (eventual completion only) of a
// 777-record request would far exceed the default 50 KiB batch limit; a
// failed Write can leave part of its records written, and returns the
// error. Counter updates are not idempotent: the driver does not retry
// them.
func (s *trajStore) Write(ctx context.Context, recs []trajectory.Record) error {
	if len(recs) == 0 {
		return nil
	}
	type job struct {
		typ   gocql.BatchType
		stmts []stmt
	}
	var jobs []job
	addGroups := func(typ gocql.BatchType, groups map[any][]stmt) {
		for _, st := range groups {
			for i := 0; i < len(st); i += loadRows {
				jobs = append(jobs, job{typ, st[i:min(i+loadRows, len(st))]})
			}
		}
	}
	rq := "INSERT INTO " + s.db.t("traj_records") + ` (user, rid, cell, day, time, profile, segment, gsm, umts, lte,
		easting, northing, lat, lon, municipality, county, city, postcode, address) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	cq := "INSERT INTO " + s.db.t("traj_cells") + " (gx, gy, cell, easting, northing) VALUES (?, ?, ?, ?, ?)"
	vq := "UPDATE " + s.db.t("traj_region") + " SET visits = visits + ? WHERE day = ? AND slot = ? AND cell = ?"
	users := map[any][]stmt{}
	cells := map[any][]stmt{}
	seen := map[int64]bool{}
	type dsc struct {
		day  trajectory.Weekday
		slot int
		cell int64
	}
	visits := map[dsc]int64{}
	for i := range recs {
		r := &recs[i]
		c := r.Cell
		users[r.User] = append(users[r.User], stmt{rq, []any{r.User, gocql.TimeUUID(), c.ID, int(r.Weekday), int(r.Time),
			int(r.Profile), int(r.Segment), r.GSM(), r.UMTS(), r.LTE(), c.Easting, c.Northing, c.Lat, c.Lon,
			c.Municipality, c.County, c.City, c.Postcode, c.Address}})
		if !seen[c.ID] {
			seen[c.ID] = true
			sq := [2]int64{gridOf(c.Easting), gridOf(c.Northing)}
			cells[sq] = append(cells[sq], stmt{cq, []any{sq[0], sq[1], c.ID, c.Easting, c.Northing}})
		}
		visits[dsc{r.Weekday, r.Slot(), c.ID}]++
	}
	slots := map[any][]stmt{}
	for k, n := range visits {
		p := [2]int{int(k.day), k.slot}
		slots[p] = append(slots[p], stmt{vq, []any{n, int(k.day), k.slot, k.cell}})
	}
	addGroups(gocql.UnloggedBatch, users)
	addGroups(gocql.UnloggedBatch, cells)
	addGroups(gocql.CounterBatch, slots)
	err := s.db.parallel(ctx, len(jobs), func(ctx context.Context, i int) error {
		b := s.db.s.Batch(jobs[i].typ)
		for _, st := range jobs[i].stmts {
			b.Query(st.q, st.args...)
		}
		return b.ExecContext(ctx)
	})
	if err != nil {
		return fmt.Errorf("cassandra trajectory: write %d records: %w", len(recs), err)
	}
	return nil
}

// candidates returns the cells in the grid squares that the box touches
// (a superset of the cells inside it).
func (s *trajStore) candidates(ctx context.Context, minX, minY, maxX, maxY int64) ([]trajectory.Hit, error) {
	gx0, gx1, gy0, gy1 := gridOf(minX), gridOf(maxX), gridOf(minY), gridOf(maxY)
	var mu sync.Mutex
	var out []trajectory.Hit
	collect := func(it *gocql.Iter) {
		var local []trajectory.Hit
		var h trajectory.Hit
		for it.Scan(&h.Cell, &h.Easting, &h.Northing) {
			local = append(local, h)
		}
		mu.Lock()
		out = append(out, local...)
		mu.Unlock()
	}
	if (gx1-gx0+1)*(gy1-gy0+1) > trajMaxSquares {
		if err := s.db.scan(ctx, "traj_cells", "gx, gy", "cell, easting, northing", collect); err != nil {
			return nil, err
		}
		return out, nil
	}
	var ys []int64
	for gy := gy0; gy <= gy1; gy++ {
		ys = append(ys, gy)
	}
	q := "SELECT cell, easting, northing FROM " + s.db.t("traj_cells") + " WHERE gx = ? AND gy IN ?"
	err := s.db.parallel(ctx, int(gx1-gx0+1), func(ctx context.Context, i int) error {
		it := s.db.s.Query(q, gx0+int64(i), ys).IterContext(ctx)
		collect(it)
		return it.Close()
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Region implements trajectory.Querier: the (weekday, slot) partition of
// visit counters, its maximum picked on the client (ties: smallest id;
// rows come by cell id).
func (s *trajStore) Region(ctx context.Context, day trajectory.Weekday, slot int) (trajectory.Busiest, bool, error) {
	if err := (trajectory.Query{Op: trajectory.OpRegion, Day: day, Slot: slot}).Validate(); err != nil {
		return trajectory.Busiest{}, false, fmt.Errorf("cassandra trajectory: region: %w", err)
	}
	it := s.db.s.Query("SELECT cell, visits FROM "+s.db.t("traj_region")+" WHERE day = ? AND slot = ?", int(day), slot).IterContext(ctx)
	var best trajectory.Busiest
	found := false
	var cell, n int64
	for it.Scan(&cell, &n) {
		if n <= 0 {
			continue
		}
		if !found || n > best.Visits || (n == best.Visits && cell < best.Cell) {
			best, found = trajectory.Busiest{Cell: cell, Visits: n}, true
		}
	}
	if err := it.Close(); err != nil {
		return trajectory.Busiest{}, false, fmt.Errorf("cassandra trajectory: region: %w", err)
	}
	return best, found, nil
}

// Counts implements trajectory.Store: records and cells counted per token
// range.
func (s *trajStore) Counts(ctx context.Context) (trajectory.Counts, error) {
	var c trajectory.Counts
	var err error
	if c.Records, err = s.db.count(ctx, "traj_records", "user"); err != nil {
		return c, fmt.Errorf("cassandra trajectory: %w", err)
	}
	if c.Cells, err = s.db.count(ctx, "traj_cells", "gx, gy"); err != nil {
		return c, fmt.Errorf("cassandra trajectory: %w", err)
	}
	return c, nil
}

// Reset implements trajectory.Store.
func (s *trajStore) Reset(ctx context.Context) error {
	return s.db.truncate(ctx, "traj_records", "traj_cells", "traj_region")
}
