package sqltraj

import (
	"strconv"
	"strings"
	"testing"
)

// fold is s with its white space folded, for comparing statements.
func fold(s string) string { return strings.Join(strings.Fields(s), " ") }

// TestTriangleSQL: the cross products are those the PostgreSQL adapter
// sent before the statement was shared (edge i from vertex i to i+1, each
// (x2 - x1) * (y - y1) - (y2 - y1) * (x - x1)).
func TestTriangleSQL(t *testing.T) {
	got := TriangleSQL(func(i int) string { return "$" + strconv.Itoa(i) + "::bigint" },
		`from traj_cells as c where c.geom && ST_MakeEnvelope($7, $8, $9, $10, 0)`)
	want := `select id, easting, northing from (
			select c.id, c.easting, c.northing,
				($3::bigint - $1::bigint) * (c.northing - $2::bigint) - ($4::bigint - $2::bigint) * (c.easting - $1::bigint) as e1,
				($5::bigint - $3::bigint) * (c.northing - $4::bigint) - ($6::bigint - $4::bigint) * (c.easting - $3::bigint) as e2,
				($1::bigint - $5::bigint) * (c.northing - $6::bigint) - ($2::bigint - $6::bigint) * (c.easting - $5::bigint) as e3
			from traj_cells as c
			where c.geom && ST_MakeEnvelope($7, $8, $9, $10, 0)) as t
		where not ((e1 < 0 or e2 < 0 or e3 < 0) and (e1 > 0 or e2 > 0 or e3 > 0))
		order by id`
	if fold(got) != fold(want) {
		t.Errorf("TriangleSQL:\n%s\nwant\n%s", fold(got), fold(want))
	}
}

// TestSchemaStatements: the region index is a statement of its own, or a
// key inside traj_records; every column gets the dialect's type, a %d in
// Text the column's length.
func TestSchemaStatements(t *testing.T) {
	types := Types{Big: "bigint", Int: "int", Small: "smallint", Tiny: "tinyint", Flag: "bool", Float: "double", Text: "varchar(%d)"}
	for _, tc := range []struct {
		name   string
		schema Schema
		want   []string // in the statements, in order
	}{
		{"separate index", Schema{Types: types, CellKey: "bigint primary key", Coord: "bigint"}, []string{
			"create table if not exists traj_records ( user_id bigint not null, site_id bigint not null, weekday tinyint not null, time int not null,",
			"gsm bool not null,", "postcode varchar(16) not null, address varchar(128) not null )",
			"create index if not exists traj_records_region on traj_records (weekday, slot, site_id)",
			"create table if not exists traj_cells ( id bigint primary key, easting bigint not null, northing bigint not null )",
		}},
		{"inline key", Schema{Types: types, RecordKey: "rid bigint", InlineIndex: true, CellKey: "bigint", Coord: "bigint",
			Cell: []string{"pos point not null"}, Options: " engine=InnoDB"}, []string{
			"create table if not exists traj_records ( rid bigint, user_id bigint not null,",
			"address varchar(128) not null, key traj_records_region (weekday, slot, site_id) ) engine=InnoDB",
			"northing bigint not null, pos point not null ) engine=InnoDB",
		}},
	} {
		stmts := tc.schema.Statements()
		if tc.schema.InlineIndex != (len(stmts) == 2) {
			t.Errorf("%s: %d statements", tc.name, len(stmts))
		}
		all := fold(strings.Join(stmts, "; "))
		at := 0
		for _, w := range tc.want {
			i := strings.Index(all[at:], w)
			if i < 0 {
				t.Errorf("%s: %q not found (in order) in\n%s", tc.name, w, all)
				break
			}
			at += i + len(w)
		}
	}
}
