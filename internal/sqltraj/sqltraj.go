// Package sqltraj is the trajectory family's part that the SQL adapters
// (sqlite, mariadb, postgres) share: the records table, the statements
// that are the same in every dialect, and the queries' checks, scans and
// k-NN search around what each adapter asks its database. The spatial
// statements (an R*Tree, a SPATIAL index, PostGIS) and how records are
// written stay in each adapter.
package sqltraj

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/fieldbench/fieldbench/workload/trajectory"
)

// Types are a dialect's column types of traj_records.
type Types struct {
	Big, Int, Small, Tiny, Flag, Float string
	// Text is the type of a string column; a %d in it takes the column's
	// maximum length.
	Text string
}

func (t Types) text(n int) string {
	if strings.Contains(t.Text, "%d") {
		return fmt.Sprintf(t.Text, n)
	}
	return t.Text
}

// recordColumns are traj_records' columns: the record's 18 attributes, as
// the study imported its CSV rows, plus the 5-minute slot, each with its
// type in Types.
var recordColumns = []struct {
	name string
	typ  func(Types) string
}{
	{"user_id", func(t Types) string { return t.Big }},
	{"site_id", func(t Types) string { return t.Big }},
	{"weekday", func(t Types) string { return t.Tiny }}, // 1 = Monday .. 7 = Sunday
	{"time", func(t Types) string { return t.Int }},     // seconds since midnight
	{"slot", func(t Types) string { return t.Small }},   // time / 300
	{"profile_id", func(t Types) string { return t.Small }},
	{"segment_id", func(t Types) string { return t.Small }},
	{"gsm", func(t Types) string { return t.Flag }},
	{"umts", func(t Types) string { return t.Flag }},
	{"lte", func(t Types) string { return t.Flag }},
	{"easting", func(t Types) string { return t.Big }},
	{"northing", func(t Types) string { return t.Big }},
	{"latitude", func(t Types) string { return t.Float }},
	{"longitude", func(t Types) string { return t.Float }},
	{"municipality", func(t Types) string { return t.text(64) }},
	{"county", func(t Types) string { return t.text(64) }},
	{"city", func(t Types) string { return t.text(64) }},
	{"postcode", func(t Types) string { return t.text(16) }},
	{"address", func(t Types) string { return t.text(128) }},
}

// RecordColumns are the names of traj_records' columns, in the order
// AppendRecord gives their values.
var RecordColumns = func() []string {
	out := make([]string, len(recordColumns))
	for i, c := range recordColumns {
		out[i] = c.name
	}
	return out
}()

// Schema is a dialect's trajectory tables: traj_records, the records with
// an index on (weekday, slot, site_id), from which the region query counts
// one slot's records per cell by an index range scan already in cell
// order; traj_cells, one row per cell of the stored records with its id
// and its integer coordinates, which every query's exact test reads,
// beside what the dialect's spatial search needs.
type Schema struct {
	// Types are traj_records' column types.
	Types
	// RecordKey is a key column before the attributes, or "".
	RecordKey string
	// InlineIndex puts the region index inside traj_records (MariaDB's
	// "key"), not in a statement of its own.
	InlineIndex bool
	// CellKey is traj_cells' id type and constraint, Coord the type of its
	// coordinates, and Cell definitions after them.
	CellKey, Coord string
	Cell           []string
	// Options follow every table's closing parenthesis.
	Options string
}

// Statements are the create statements of the tables and the index, each
// "if not exists".
func (s Schema) Statements() []string {
	var defs []string
	if s.RecordKey != "" {
		defs = append(defs, s.RecordKey)
	}
	for _, c := range recordColumns {
		defs = append(defs, c.name+" "+c.typ(s.Types)+" not null")
	}
	const region = "traj_records_region on traj_records (weekday, slot, site_id)"
	var out []string
	if s.InlineIndex {
		defs = append(defs, "key "+strings.Replace(region, " on traj_records", "", 1))
		out = append(out, table("traj_records", defs, s.Options))
	} else {
		out = append(out, table("traj_records", defs, s.Options), "create index if not exists "+region)
	}
	cell := append([]string{"id " + s.CellKey, "easting " + s.Coord + " not null", "northing " + s.Coord + " not null"}, s.Cell...)
	return append(out, table("traj_cells", cell, s.Options))
}

func table(name string, defs []string, options string) string {
	return "create table if not exists " + name + " (\n\t" + strings.Join(defs, ",\n\t") + "\n)" + options
}

// InsertSQL is the start of a multi-row INSERT of records, up to the
// rows' values.
var InsertSQL = "insert into traj_records (" + strings.Join(RecordColumns, ", ") + ") values "

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// AppendRecord appends r's values in RecordColumns' order, as integers,
// floats and strings (the flags 0 or 1).
func AppendRecord(args []any, r *trajectory.Record) []any {
	c := r.Cell
	return append(args, r.User, c.ID, int64(r.Weekday), int64(r.Time), int64(r.Slot()),
		int64(r.Profile), int64(r.Segment), b2i(r.GSM()), b2i(r.UMTS()), b2i(r.LTE()),
		c.Easting, c.Northing, c.Lat, c.Lon, c.Municipality, c.County, c.City, c.Postcode, c.Address)
}

// RegionSQL is the region query, its parameters the weekday and the slot
// (p gives the dialect's): the cell with the most records in that slot,
// the lowest id among equals, from the (weekday, slot, site_id) index.
func RegionSQL(p func(n int) string) string {
	return `select site_id, count(*) as n from traj_records
		where weekday = ` + p(1) + ` and slot = ` + p(2) + `
		group by site_id order by n desc, site_id limit 1`
}

// TriangleSQL is the range query: the candidate cells that from gives (a
// FROM clause naming traj_cells as c, with the dialect's spatial filter,
// whose parameters follow the vertices'), then the exact closed
// point-in-triangle test on their integer coordinates: the three edge
// cross products may not have mixed signs. v(i) is the parameter of the
// vertices' i-th coordinate: x1, y1, x2, y2, x3, y3 for i 1 to 6.
func TriangleSQL(v func(i int) string, from string) string {
	edge := func(a, b int) string { // from vertex a to vertex b
		ax, ay, bx, by := v(2*a-1), v(2*a), v(2*b-1), v(2*b)
		return "(" + bx + " - " + ax + ") * (c.northing - " + ay + ") - (" + by + " - " + ay + ") * (c.easting - " + ax + ")"
	}
	return `select id, easting, northing from (
			select c.id, c.easting, c.northing,
				` + edge(1, 2) + ` as e1,
				` + edge(2, 3) + ` as e2,
				` + edge(3, 1) + ` as e3
			` + from + `) as t
		where not ((e1 < 0 or e2 < 0 or e3 < 0) and (e1 > 0 or e2 > 0 or e3 > 0))
		order by id`
}

// CountsSQL answers the numbers of records and of cells.
const CountsSQL = `select (select count(*) from traj_records), (select count(*) from traj_cells)`

// Rows is what the queries need of a driver's rows: *sql.Rows, or
// pgx.Rows behind a Close that returns an error.
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
	Close() error
}

// Row is one row a query answered: *sql.Row, pgx.Row.
type Row interface{ Scan(dest ...any) error }

// Reads is trajectory.Querier and trajectory.Store's Counts over an
// adapter's statements; a store embeds it. Each query is checked
// (trajectory.Query.Validate) before it is asked; the statements answer
// rows of (id, easting, northing), in the order the answer wants, with the
// exact squared distance as a fourth column where D2 says so.
type Reads struct {
	// Name starts every error: "sqlite trajectory".
	Name string
	// Within asks for the cells within radius of p.
	Within func(ctx context.Context, p trajectory.Point, radius int64) (Rows, error)
	// Nearest asks for the k cells nearest p within r.
	Nearest func(ctx context.Context, p trajectory.Point, k int, r int64) (Rows, error)
	// Grow says the database has no nearest-neighbour search: KNN asks
	// Nearest with a radius of trajectory.KNNStartRadius, doubling up to
	// maxDist, until it answers k cells. Once a round finds k cells within
	// r, no cell outside r can be nearer than the k-th, so those k (exact
	// squared distance, then id) are the answer. Otherwise KNN asks it
	// once, within maxDist.
	Grow bool
	// D2 says Within's and Nearest's rows carry the squared distance.
	D2 bool
	// Inside asks for the cells in the closed triangle t.
	Inside func(ctx context.Context, t trajectory.Triangle) (Rows, error)
	// Busiest runs RegionSQL (or the dialect's like of it).
	Busiest func(ctx context.Context, day trajectory.Weekday, slot int) Row
	// Count runs CountsSQL.
	Count func(ctx context.Context) Row
	// NoRows is the driver's error for a query that answered no row.
	NoRows error
}

func (r Reads) check(what string, q trajectory.Query) error {
	if err := q.Validate(); err != nil {
		return fmt.Errorf("%s: %s: %w", r.Name, what, err)
	}
	return nil
}

// Distance implements trajectory.Querier.
func (r Reads) Distance(ctx context.Context, p trajectory.Point, radius int64) ([]trajectory.Hit, error) {
	if err := r.check("distance", trajectory.Query{Op: trajectory.OpDistance, At: p, Radius: radius}); err != nil {
		return nil, err
	}
	rows, err := r.Within(ctx, p, radius)
	return r.hits("distance", rows, err, r.D2)
}

// KNN implements trajectory.Querier (see Reads.Grow).
func (r Reads) KNN(ctx context.Context, p trajectory.Point, k int, maxDist int64) ([]trajectory.Hit, error) {
	if err := r.check("knn", trajectory.Query{Op: trajectory.OpKNN, At: p, K: k, MaxDist: maxDist}); err != nil {
		return nil, err
	}
	d := maxDist
	if r.Grow {
		d = min(int64(trajectory.KNNStartRadius), maxDist)
	}
	for {
		rows, err := r.Nearest(ctx, p, k, d)
		out, err := r.hits("knn", rows, err, r.D2)
		if err != nil || len(out) == k || d == maxDist {
			return out, err
		}
		d = min(2*d, maxDist)
	}
}

// Range implements trajectory.Querier.
func (r Reads) Range(ctx context.Context, t trajectory.Triangle) ([]trajectory.Hit, error) {
	if err := r.check("range", trajectory.Query{Op: trajectory.OpRange, Tri: t}); err != nil {
		return nil, err
	}
	rows, err := r.Inside(ctx, t)
	return r.hits("range", rows, err, false)
}

// Region implements trajectory.Querier.
func (r Reads) Region(ctx context.Context, day trajectory.Weekday, slot int) (trajectory.Busiest, bool, error) {
	if err := r.check("region", trajectory.Query{Op: trajectory.OpRegion, Day: day, Slot: slot}); err != nil {
		return trajectory.Busiest{}, false, err
	}
	var b trajectory.Busiest
	err := r.Busiest(ctx, day, slot).Scan(&b.Cell, &b.Visits)
	switch {
	case errors.Is(err, r.NoRows):
		return b, false, nil
	case err != nil:
		return b, false, fmt.Errorf("%s: region: %w", r.Name, err)
	}
	return b, true, nil
}

// Counts implements trajectory.Store.
func (r Reads) Counts(ctx context.Context) (trajectory.Counts, error) {
	var c trajectory.Counts
	if err := r.Count(ctx).Scan(&c.Records, &c.Cells); err != nil {
		return c, fmt.Errorf("%s: count: %w", r.Name, err)
	}
	return c, nil
}

// hits reads the rows of a query (err: its error), dropping the squared
// distance when withD2.
func (r Reads) hits(what string, rows Rows, err error, withD2 bool) ([]trajectory.Hit, error) {
	if err != nil {
		return nil, fmt.Errorf("%s: %s: %w", r.Name, what, err)
	}
	defer rows.Close()
	var out []trajectory.Hit
	var h trajectory.Hit
	var d2 int64
	dst := []any{&h.Cell, &h.Easting, &h.Northing}
	if withD2 {
		dst = append(dst, &d2)
	}
	for rows.Next() {
		if err := rows.Scan(dst...); err != nil {
			return nil, fmt.Errorf("%s: %s: scan: %w", r.Name, what, err)
		}
		out = append(out, h)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("%s: %s: %w", r.Name, what, err)
	}
	return out, nil
}
