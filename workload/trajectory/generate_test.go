package trajectory

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/csv"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func newGen(t testing.TB, scale float64, seed int64) *Generator {
	t.Helper()
	g, err := New(Options{Scale: scale, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// fingerprint hashes records.csv and cells.csv as generate writes them.
func fingerprint(t testing.TB, g *Generator) string {
	t.Helper()
	h := sha256.New()
	if _, err := g.WriteRecordsCSV(context.Background(), h); err != nil {
		t.Fatal(err)
	}
	if err := g.City().WriteCellsCSV(h); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// TestFingerprint pins the dataset of a fixed (scale, seed): any change to
// the city, the users, their rhythms or the CSV format changes the hash and
// must be deliberate (update the constant and say why in the commit).
func TestFingerprint(t *testing.T) {
	t.Parallel()
	const want = "b067e60ce14e34dd28ddd9da47ababa16fe86b9390ebfaa746ed6156c1fdceeb"
	got := fingerprint(t, newGen(t, 0.002, 1))
	if got != want {
		t.Fatalf("fingerprint of scale 0.002 seed 1 = %s, want %s", got, want)
	}
}

func TestDeterminism(t *testing.T) {
	t.Parallel()
	a, b := newGen(t, 0.003, 7), newGen(t, 0.003, 7)
	if fa, fb := fingerprint(t, a), fingerprint(t, b); fa != fb {
		t.Fatalf("same seed, different data: %s vs %s", fa, fb)
	}
	if fa, fc := fingerprint(t, a), fingerprint(t, newGen(t, 0.003, 8)); fa == fc {
		t.Fatal("seeds 7 and 8 give the same data")
	}
	// Any record from its index alone: Record, a cursor reading forward,
	// a cursor jumping around and Fill from any offset agree.
	seq := make([]Record, a.Len())
	if n := a.NewCursor().Fill(0, seq); int64(n) != a.Len() {
		t.Fatalf("Fill wrote %d of %d", n, a.Len())
	}
	jump := a.NewCursor()
	perm := NewPermutation(a.Len(), 3)
	for i := range a.Len() {
		j := perm.At(i)
		if r := jump.At(j); r != seq[j] {
			t.Fatalf("cursor.At(%d) after jumps = %+v, want %+v", j, r, seq[j])
		}
		if i%97 == 0 {
			if r := a.Record(j); r != seq[j] {
				t.Fatalf("Record(%d) = %+v, want %+v", j, r, seq[j])
			}
		}
	}
	part := make([]Record, 1000)
	for _, from := range []int64{0, 1, 777, a.Len() - 500} {
		n := a.NewCursor().Fill(from, part)
		if want := min(1000, a.Len()-from); int64(n) != want {
			t.Fatalf("Fill(%d) wrote %d, want %d", from, n, want)
		}
		for k := range n {
			if part[k] != seq[from+int64(k)] {
				t.Fatalf("Fill(%d)[%d] differs from the sequential record", from, k)
			}
		}
	}
	// Time order: record i is user i mod U + 1 at slot of week i div U.
	u := int64(a.Users())
	for i, r := range seq {
		w := int64(i) / u
		if r.User != int64(i)%u+1 || int64(r.Weekday-1)*SlotsPerDay+int64(r.Slot()) != w {
			t.Fatalf("record %d is user %d at %s slot %d, want user %d at slot of week %d", i, r.User, r.Weekday, r.Slot(), int64(i)%u+1, w)
		}
	}
}

func TestScale(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		scale   float64
		records int64
		users   int
	}{
		{1, Dataset0, 3216},
		{2, Dataset1, 6432},
		{4, Dataset2, 12864},
		{0.01, 64834, 33},
		{0.5, 3241699, 1608},
		{1e-6, 6, 1},
	} {
		n, err := RecordsForScale(tc.scale)
		if err != nil || n != tc.records || UsersForRecords(n) != tc.users {
			t.Errorf("scale %g: %d records (%v), %d users; want %d records, %d users", tc.scale, n, err, UsersForRecords(n), tc.records, tc.users)
		}
	}
	// Scale 1.0 is the study's dataset0: 3216 user-weeks less 58 updates.
	if 3216*SlotsPerWeek-58 != Dataset0 {
		t.Fatal("arithmetic of the documented remainder is wrong")
	}
	for _, bad := range []float64{0, -1, 1e-9, MaxScale + 1} {
		if _, err := RecordsForScale(bad); err == nil {
			t.Errorf("scale %g accepted", bad)
		}
		if _, err := New(Options{Scale: bad}); err == nil {
			t.Errorf("New with scale %g accepted", bad)
		}
	}
	g := newGen(t, 0.001, 1)
	if g.Len() != 6483 || g.Users() != 4 {
		t.Fatalf("scale 0.001: %d records, %d users", g.Len(), g.Users())
	}
	// The last slots are short of users, never the first ones.
	last := SlotsPerWeek - 1
	if from, to := g.SlotRange(0); from != 0 || to != 4 {
		t.Fatalf("slot 0 range [%d,%d)", from, to)
	}
	if from, to := g.SlotRange(last); from != to {
		t.Fatalf("the last slot of a truncated week has records [%d,%d)", from, to)
	}
}

// TestRhythms checks the city's weekly patterns on a small dataset.
func TestRhythms(t *testing.T) {
	t.Parallel()
	g := newGen(t, 0.05, 1) // 161 users
	type key struct {
		kind    Kind
		weekday bool
		hour    int
	}
	count := map[key]int{}
	cur := g.NewCursor()
	buf := make([]Record, 4096)
	for from := int64(0); from < g.Len(); {
		n := cur.Fill(from, buf)
		for _, r := range buf[:n] {
			count[key{r.Cell.Kind, r.Weekday <= Friday, r.Slot() / 12}]++
		}
		from += int64(n)
	}
	for _, tc := range []struct {
		name     string
		more     key
		less     key
		atLeastX int
	}{
		{"weekday lunch crowds at commercial cells exceed their nights", key{Commercial, true, 12}, key{Commercial, true, 2}, 4},
		{"weekday lunch at commercial cells exceeds weekday mid-afternoon", key{Commercial, true, 12}, key{Commercial, true, 14}, 1},
		{"offices are busy on weekday mornings, not at night", key{Office, true, 10}, key{Office, true, 3}, 5},
		{"offices are busier on weekdays than at weekends", key{Office, true, 10}, key{Office, false, 10}, 2},
		{"people sleep in residential cells", key{Residential, true, 3}, key{Residential, true, 11}, 2},
		{"Saturday and Sunday shopping crowds", key{Commercial, false, 13}, key{Commercial, false, 4}, 3},
		{"evenings at leisure cells", key{Leisure, true, 19}, key{Leisure, true, 4}, 3},
	} {
		// weekday counts cover 5 days, weekend 2: compare per day
		per := func(k key) float64 {
			d := 2.0
			if k.weekday {
				d = 5
			}
			return float64(count[k]) / d
		}
		if per(tc.more) < float64(tc.atLeastX)*per(tc.less) || count[tc.more] == 0 {
			t.Errorf("%s: %.0f vs %.0f updates a day, want at least %dx", tc.name, per(tc.more), per(tc.less), tc.atLeastX)
		}
	}
}

// TestAttributes checks records.csv and cells.csv as generate writes them:
// the 18 attributes with a header, values in range, one source flag set.
func TestAttributes(t *testing.T) {
	t.Parallel()
	g := newGen(t, 0.002, 3)
	dir := t.TempDir()
	st, err := g.WriteCSV(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if st.Records != g.Len() || st.Cells != len(g.City().Cells) || st.Cells < 250 {
		t.Fatalf("stats %+v", st)
	}
	f, err := os.Open(filepath.Join(dir, RecordsFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rd := csv.NewReader(f)
	header, err := rd.Read()
	if err != nil || strings.Join(header, ",") != strings.Join(RecordColumns, ",") || len(header) != 18 {
		t.Fatalf("header %v (%v)", header, err)
	}
	col := map[string]int{}
	for i, c := range header {
		col[c] = i
	}
	rows := int64(0)
	sites := map[string]bool{}
	for {
		row, err := rd.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		rows++
		for i, v := range row {
			if v == "" {
				t.Fatalf("row %d: empty %s", rows, header[i])
			}
		}
		if _, err := ParseWeekday(row[col["weekday"]]); err != nil {
			t.Fatalf("row %d: %v", rows, err)
		}
		if len(row[col["time"]]) != 8 || row[col["time"]][2] != ':' {
			t.Fatalf("row %d: time %q", rows, row[col["time"]])
		}
		flags := 0
		for _, c := range []string{"gsm", "umts", "lte"} {
			flags += map[string]int{"0": 0, "1": 1}[row[col[c]]]
		}
		if flags != 1 {
			t.Fatalf("row %d: %d source flags set", rows, flags)
		}
		lat, _ := strconv.ParseFloat(row[col["latitude"]], 64)
		lon, _ := strconv.ParseFloat(row[col["longitude"]], 64)
		if lat < 55.9 || lat > 56.4 || lon < 15.2 || lon > 16.0 {
			t.Fatalf("row %d: lat/lon %v,%v outside the city", rows, lat, lon)
		}
		if p, _ := strconv.Atoi(row[col["profile_id"]]); p < 1 || p > 10 {
			t.Fatalf("row %d: profile %d", rows, p)
		}
		if s, _ := strconv.Atoi(row[col["segment_id"]]); s < 1 || s > 3 {
			t.Fatalf("row %d: segment %d", rows, s)
		}
		sites[row[col["site_id"]]] = true
	}
	if rows != g.Len() {
		t.Fatalf("records.csv has %d rows, want %d", rows, g.Len())
	}
	cells, err := os.ReadFile(filepath.Join(dir, CellsFile))
	if err != nil {
		t.Fatal(err)
	}
	cr, err := csv.NewReader(bytes.NewReader(cells)).ReadAll()
	if err != nil || len(cr) != st.Cells+1 || len(cr[0]) != len(CellColumns) {
		t.Fatalf("cells.csv: %d lines, %v", len(cr), err)
	}
	known := map[string]bool{}
	for _, row := range cr[1:] {
		known[row[0]] = true
	}
	for s := range sites {
		if !known[s] {
			t.Fatalf("records name site %s that cells.csv lacks", s)
		}
	}
}

// TestCityModel checks the city's fixed properties: positions on the grid,
// twins (shared masts) that make distance ties, the lat/lon conversion.
func TestCityModel(t *testing.T) {
	t.Parallel()
	c := newGen(t, 0.001, 1).City()
	pos := map[Point]int{}
	ids := map[int64]bool{}
	for i := range c.Cells {
		cell := &c.Cells[i]
		pos[cell.Pos()]++
		if ids[cell.ID] || (i > 0 && c.Cells[i-1].ID >= cell.ID) {
			t.Fatalf("cell ids not unique and sorted at %d", i)
		}
		ids[cell.ID] = true
		if !cell.Supports(GSM) {
			t.Fatalf("cell %d has no GSM", cell.ID)
		}
	}
	shared := 0
	for _, n := range pos {
		if n > 1 {
			shared++
		}
	}
	if shared < 5 {
		t.Fatalf("only %d shared masts: distance ties would be rare", shared)
	}
	// The centre and a point 10 km north: latitude grows ~0.09° per 10 km.
	lat0, lon0 := utmToLatLon(centreEasting, centreNorthing)
	lat1, _ := utmToLatLon(centreEasting, centreNorthing+10000)
	if lat0 < 56.1 || lat0 > 56.2 || lon0 < 15.5 || lon0 > 15.65 || lat1-lat0 < 0.088 || lat1-lat0 > 0.092 {
		t.Fatalf("UTM conversion: centre %v,%v; 10 km north +%v°", lat0, lon0, lat1-lat0)
	}
}

func TestPermutation(t *testing.T) {
	t.Parallel()
	for _, n := range []int64{1, 2, 3, 7, 64, 1000, 4097} {
		p := NewPermutation(n, 11)
		seen := make([]bool, n)
		fixed := 0
		for i := range n {
			j := p.At(i)
			if j < 0 || j >= n || seen[j] {
				t.Fatalf("n=%d: At(%d)=%d repeats or is out of range", n, i, j)
			}
			seen[j] = true
			if j == i {
				fixed++
			}
		}
		if n >= 1000 && fixed > int(n/50) {
			t.Fatalf("n=%d: %d fixed points: not shuffled", n, fixed)
		}
	}
}

// BenchmarkGenerate reports how fast records are made (the figure generate
// prints): go test -bench Generate ./workload/trajectory/
func BenchmarkGenerate(b *testing.B) {
	g := newGen(b, 1, 1)
	cur := g.NewCursor()
	buf := make([]Record, 1<<14)
	var n, from int64
	for b.Loop() {
		k := cur.Fill(from, buf)
		n += int64(k)
		if from += int64(k); from >= g.Len() {
			from = 0
		}
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "records/s")
}

// BenchmarkGenerateCSV includes formatting records.csv (in parallel).
func BenchmarkGenerateCSV(b *testing.B) {
	g := newGen(b, 0.1, 1)
	var n int64
	for b.Loop() {
		if _, err := g.WriteRecordsCSV(context.Background(), io.Discard); err != nil {
			b.Fatal(err)
		}
		n += g.Len()
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "records/s")
}

// BenchmarkGenerateRandomOrder is the random write mode's generation cost:
// records fetched through the permutation, day plans rarely reused.
func BenchmarkGenerateRandomOrder(b *testing.B) {
	g := newGen(b, 1, 1)
	cur := g.NewCursor()
	perm := NewPermutation(g.Len(), 1)
	var n, pos int64
	for b.Loop() {
		for range 1 << 14 {
			r := cur.At(perm.At(pos))
			_ = r
			if pos++; pos == g.Len() {
				pos = 0
			}
		}
		n += 1 << 14
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "records/s")
}
