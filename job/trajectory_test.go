package job_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/fieldbench/fieldbench/adapter"
	"github.com/fieldbench/fieldbench/job"
	"github.com/fieldbench/fieldbench/result"
	"github.com/fieldbench/fieldbench/workload/trajectory"
)

// runTrajectory runs the trajectory job's run command with opts (on the
// embedded SQLite, into a temporary results directory) and reads its result.
func runTrajectory(t *testing.T, opts map[string]string) (*result.Run, error) {
	t.Helper()
	res := filepath.Join(t.TempDir(), "results")
	if _, _, err := runJob(t, trajectory.Name, "run", with(opts, "results", res)); err != nil {
		return nil, err
	}
	return onlyRun(t, res), nil
}

// TestTrajectoryRate runs the sequential mode closed and open loop. 1297
// records (scale 0.0002) in requests of 100 make 13 write requests; at 40
// requests/s their intended starts span 12/40 s, so the open-loop write
// phase lasts at least 0.3 s and does at most 13/0.3 requests/s, whatever
// the machine. Both runs record the loop and the rate in their header.
func TestTrajectoryRate(t *testing.T) {
	t.Parallel()
	base := map[string]string{"scale": "0.0002", "batch": "100", "mode": "sequential", "queries": "2", "repeat": "1"}
	for _, tc := range []struct {
		name     string
		rate     string
		loop     string
		wantRate float64
	}{
		{"closed loop by default", "", "closed", 0},
		{"open loop", "40", "open", 40},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			opts := map[string]string{}
			for k, v := range base {
				opts[k] = v
			}
			if tc.rate != "" {
				opts["rate"] = tc.rate
			}
			run, err := runTrajectory(t, opts)
			if err != nil {
				t.Fatal(err)
			}
			if got := run.Header.Options["loop"]; got != tc.loop {
				t.Fatalf("header loop %v, want %s", got, tc.loop)
			}
			if got := run.Header.Options["rate"]; got != tc.wantRate {
				t.Fatalf("header rate %v (%T), want %v", got, got, tc.wantRate)
			}
			sum := run.Summary
			if sum == nil || sum.Ops["write"].Count != 13 || sum.Ops["region"].Count != 2 {
				t.Fatalf("summary %+v: want 13 writes and 2 region queries", sum)
			}
			if tc.wantRate == 0 {
				return
			}
			if secs := sum.Extra["sequential_write_seconds"]; secs < 0.3 {
				t.Fatalf("open-loop write phase took %.3fs; 13 starts at 40/s span at least 0.3s", secs)
			}
			if rps := sum.Extra["sequential_write_requests_per_sec"]; rps > 13/0.3 {
				t.Fatalf("open-loop write phase did %.1f requests/s, above what 40/s allows", rps)
			}
		})
	}
}

func TestTrajectoryBadRate(t *testing.T) {
	t.Parallel()
	_, err := runTrajectory(t, map[string]string{"scale": "0.0002", "rate": "-1"})
	if !job.IsUsage(err) || !strings.Contains(err.Error(), "--rate must be") {
		t.Fatalf("--rate -1: %v, want a usage error about --rate", err)
	}
	// NaN and infinities are refused as the option is set (every float
	// option refuses them).
	j, err := job.New("trajectory")
	if err != nil {
		t.Fatal(err)
	}
	for _, rate := range []string{"NaN", "+Inf", "-inf"} {
		if err := j.Opts().Set("rate", rate); err == nil || !strings.Contains(err.Error(), "not a finite number") {
			t.Errorf("--rate %s: %v, want it refused as not a finite number", rate, err)
		}
	}
}

func TestTrajectoryBadInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	res := filepath.Join(dir, "results")
	loaded := "sqlite://" + filepath.Join(dir, "loaded.db")
	if _, stderr, err := runJob(t, trajectory.Name, "load", map[string]string{"db": loaded, "scale": "0.0002"}); err != nil {
		t.Fatalf("load: %v %s", err, stderr)
	}
	empty := "sqlite://" + filepath.Join(dir, "empty.db")
	run := func(kv ...string) map[string]string { return with(map[string]string{"results": res}, kv...) }
	write := func(kv ...string) map[string]string { return with(map[string]string{"db": empty}, kv...) }
	query := func(kv ...string) map[string]string { return with(map[string]string{"db": loaded}, kv...) }
	checkBadInput(t, trajectory.Name, []badInput{
		{"unknown mode", "run", run("mode", "foo"), `unknown trajectory mode "foo"`},
		{"scale 0", "run", run("scale", "0"), "scale must be positive"},
		{"negative scale", "run", run("scale", "-1"), "scale must be positive"},
		{"scale too big", "run", run("scale", "1000"), "above the maximum"},
		{"k 0 in run", "run", run("k", "0"), "k must be 1"},
		{"negative radius", "run", run("radius", "-5"), "radius must be"},
		{"batch 0", "run", run("batch", "0"), "--batch must be at least 1"},
		{"clients 0", "run", run("clients", "0"), "--clients must be at least 1"},
		{"repeat 0", "run", run("repeat", "0"), "--repeat must be at least 1"},
		{"data without reset", "run", run("db", loaded), "pass --reset"},
		{"generate scale 0", "generate", map[string]string{"scale": "0", "out": dir}, "scale must be positive"},
		{"generate without out", "generate", nil, "needs --out"},
		{"load negative scale", "load", map[string]string{"db": empty, "scale": "-0.5"}, "scale must be positive"},
		{"load into loaded", "load", map[string]string{"db": loaded, "scale": "0.0002"}, "already holds"},
		{"op write without db", "op write", map[string]string{"index": "0"}, "needs --db"},
		{"op write without index", "op write", write("scale", "0.0002"), "needs --index (the first record, 0 to 1296"},
		{"op write negative index", "op write", write("scale", "0.0002", "index", "-1"), "--index must be from 0 to 1296 at --scale 0.0002 (1297 records; got -1)"},
		{"op write index past the end", "op write", write("scale", "0.0002", "index", "1297"), "--index must be from 0 to 1296"},
		{"op write count 0", "op write", write("index", "0", "count", "0"), "--count must be at least 1 (got 0)"},
		{"op write negative count", "op write", write("index", "0", "count", "-3"), "--count must be at least 1 (got -3)"},
		{"op write count past the end", "op write", write("scale", "0.0002", "index", "1290", "count", "8"), "goes past the last record 1296 at --scale 0.0002: --count must be at most 7"},
		{"op write scale 0", "op write", write("scale", "0", "index", "0"), "scale must be positive"},
		{"op without db", "op distance", map[string]string{"x": "1", "y": "2"}, "needs --db"},
		{"op distance without x", "op distance", query("y", "2"), "needs --x and --y"},
		{"op knn k 0", "op knn", query("x", "1", "y", "2", "k", "0"), "k must be 1"},
		{"op knn negative bound", "op knn", query("x", "1", "y", "2", "max-dist", "-1"), "max distance"},
		{"op triangle missing", "op range", query(), "needs --triangle"},
		{"op triangle 5 values", "op range", query("triangle", "1,2,3,4,5"), "six whole numbers"},
		{"op triangle not numbers", "op range", query("triangle", "a,b,c,d,e,f"), "not a whole number"},
		{"op triangle flat", "op range", query("triangle", "0,0,1,1,2,2"), "zero area"},
		{"op weekday 9", "op region", query("weekday", "9", "slot", "1"), "weekday 9 out of range"},
		{"op slot 300", "op region", query("weekday", "1", "slot", "300"), "bad time slot"},
		{"op region without slot", "op region", query("weekday", "1"), "needs --weekday and --slot"},
		{"op on an empty database", "op region", map[string]string{"db": empty, "weekday": "1", "slot": "1"}, "holds no trajectory data"},
	})
	if entries, _ := os.ReadDir(res); len(entries) > 0 {
		t.Fatalf("refused runs left %d run directories", len(entries))
	}
}

// resetEvent is the reset event's detail between the modes.
var resetEvent = regexp.MustCompile(`database emptied for the random write phase in [0-9]+\.[0-9]s \(no operation meanwhile\)`)

// TestTrajectoryRunEndToEnd runs both modes at a tiny scale into a given
// database, checks the result file (throughput points per mode and request
// type, per-operation counts, no errors, a report), then queries the
// database the run left with op and compares with the reference.
func TestTrajectoryRunEndToEnd(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	res := filepath.Join(dir, "results")
	dsn := "sqlite://" + filepath.Join(dir, "t.db")
	out, stderr, err := runJob(t, trajectory.Name, "run", map[string]string{"db": dsn, "scale": "0.001", "seed": "4",
		"queries": "4", "repeat": "3", "batch": "250", "results": res})
	if err != nil {
		t.Fatalf("%v\n%s\n%s", err, out, stderr)
	}
	run := onlyRun(t, res)
	if _, err := os.Stat(filepath.Join(run.Dir, "report.html")); err != nil {
		t.Fatal("no report.html:", err)
	}
	if m, ok := run.Header.Series["trajectory-throughput"]; !ok || m.YLabel != "throughput (requests/s)" || m.Title == "" {
		t.Fatalf("series meta %+v", run.Header.Series)
	}
	cats := map[string]result.Point{}
	records := 0
	for _, p := range run.Points {
		switch p.Series {
		case "trajectory-throughput":
			cats[p.Labels["category"]] = p
		case "trajectory-write-records":
			records++
			if p.Y <= 0 || p.N != 6483 {
				t.Fatalf("records/s point %+v", p)
			}
		}
	}
	for _, mode := range []string{"sequential", "random"} {
		for _, op := range trajectory.Ops {
			p, ok := cats[mode+" "+op]
			if !ok || p.Y <= 0 || p.Failed != "" {
				t.Fatalf("throughput point of %q: %+v (have %d categories)", mode+" "+op, p, len(cats))
			}
		}
	}
	if len(cats) != 10 || records != 2 {
		t.Fatalf("%d throughput categories, %d records/s points", len(cats), records)
	}
	sum := run.Summary
	if sum == nil {
		t.Fatal("no summary")
	}
	// 6483 records in batches of 250: 26 requests sequential, 4 clients x
	// 7 random (1621 or 1620 records each).
	if got := sum.Ops["write"].Count; got != 26+28 {
		t.Fatalf("write requests %d, want 54", got)
	}
	for _, op := range trajectory.QueryOps {
		if s := sum.Ops[op]; s.Count != 2*4*3 || len(s.Errors) != 0 {
			t.Fatalf("%s: %+v, want 24 requests and no errors", op, s)
		}
	}
	for _, k := range []string{"records", "cells", "sequential_write_records_per_sec", "random_write_records_per_sec", "random_region_requests_per_sec"} {
		if sum.Extra[k] <= 0 {
			t.Fatalf("summary extra %s = %v", k, sum.Extra[k])
		}
	}
	if sum.Extra["stored_records"] != 6483 {
		t.Fatalf("database holds %v records after the run", sum.Extra["stored_records"])
	}
	events := map[string]bool{}
	for _, e := range run.Events {
		events[e.Name] = true
		// The reset between the modes says how long it took: no
		// operation runs meanwhile, so the per-second series show 0
		// ops/s for that long (docs/couchdb.md).
		if e.Name == "reset" && !resetEvent.MatchString(e.Detail) {
			t.Errorf("reset event %q does not say how long it took", e.Detail)
		}
	}
	for _, e := range []string{"sequential write", "sequential knn", "reset", "random write", "random region"} {
		if !events[e] {
			t.Fatalf("no %q event: %v", e, events)
		}
	}
	if !resetEvent.MatchString(stderr) {
		t.Errorf("stderr does not say how long the reset took:\n%s", stderr)
	}

	// The database the run left answers op queries like the reference.
	g, err := trajectory.New(trajectory.Options{Scale: 0.001, Seed: 4})
	if err != nil {
		t.Fatal(err)
	}
	ref, err := trajectory.OracleFor(context.Background(), g)
	if err != nil {
		t.Fatal(err)
	}
	c := ref.Cells()[0]
	x, y := fmt.Sprint(c.Easting), fmt.Sprint(c.Northing)
	for _, tc := range []struct {
		op   string
		opts map[string]string
		want trajectory.Answer
	}{
		{"distance", map[string]string{"x": x, "y": y, "radius": "3000"}, ref.Answer(trajectory.Query{Op: trajectory.OpDistance, At: c.Pos(), Radius: 3000})},
		{"knn", map[string]string{"x": x, "y": y, "k": "3", "max-dist": "100000"}, ref.Answer(trajectory.Query{Op: trajectory.OpKNN, At: c.Pos(), K: 3, MaxDist: 100000})},
		{"range", map[string]string{"triangle": fmt.Sprintf("%d,%d,%d,%d,%d,%d", c.Easting-5000, c.Northing-5000, c.Easting+5000, c.Northing-5000, c.Easting, c.Northing+5000)},
			ref.Answer(trajectory.Query{Op: trajectory.OpRange, Tri: trajectory.Triangle{{X: c.Easting - 5000, Y: c.Northing - 5000}, {X: c.Easting + 5000, Y: c.Northing - 5000}, {X: c.Easting, Y: c.Northing + 5000}}})},
		{"region", map[string]string{"weekday": "tue", "slot": "12:00"}, ref.Answer(trajectory.Query{Op: trajectory.OpRegion, Day: trajectory.Tuesday, Slot: 144})},
	} {
		out, stderr, err := runJob(t, trajectory.Name, "op "+tc.op, with(tc.opts, "db", dsn))
		if err != nil {
			t.Fatalf("op %s %v: %v %s", tc.op, tc.opts, err, stderr)
		}
		var got trajectory.Answer
		sc := bufio.NewScanner(strings.NewReader(out))
		for sc.Scan() {
			if tc.op == "region" {
				if err := json.Unmarshal(sc.Bytes(), &got.Busiest); err != nil {
					t.Fatal(err)
				}
				got.Found = true
				continue
			}
			var h trajectory.Hit
			if err := json.Unmarshal(sc.Bytes(), &h); err != nil {
				t.Fatalf("not JSON lines: %v\n%s", err, out)
			}
			got.Hits = append(got.Hits, h)
		}
		if !got.Equal(tc.want) || (len(tc.want.Hits) == 0 && !tc.want.Found) {
			t.Fatalf("op %s %v printed %s, reference %s", tc.op, tc.opts, got, tc.want)
		}
	}

	// Run again into the same database: refused without --reset, fine with.
	if _, stderr, err := runJob(t, trajectory.Name, "run", map[string]string{"db": dsn, "scale": "0.0005", "mode": "random", "queries": "2", "repeat": "1", "reset": "true", "results": res}); err != nil {
		t.Fatalf("rerun with --reset: %v %s", err, stderr)
	} else if !strings.Contains(stderr, "emptying the trajectory data") || !strings.Contains(stderr, "emptied in ") {
		t.Errorf("rerun with --reset said nothing of emptying the database:\n%s", stderr)
	}
}

func TestTrajectoryGenerate(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out, stderr, err := runJob(t, trajectory.Name, "generate", map[string]string{"scale": "0.001", "seed": "2", "out": dir})
	if err != nil || !strings.Contains(out, "records/s") || !strings.Contains(out, "6483 records") {
		t.Fatalf("generate: %v\n%s\n%s", err, out, stderr)
	}
	b, err := os.ReadFile(filepath.Join(dir, trajectory.RecordsFile))
	if err != nil || bytes.Count(b, []byte("\n")) != 6484 {
		t.Fatalf("records.csv: %d lines, %v", bytes.Count(b, []byte("\n")), err)
	}
	if _, err := os.Stat(filepath.Join(dir, trajectory.CellsFile)); err != nil {
		t.Fatal(err)
	}
}

// TestTrajectoryOpWrite writes slices of one dataset with op write into a
// fresh database and checks after each that every printed line is the
// generator's record at its index (field for field against its records.csv
// line), that the store holds exactly the records written so far, and that
// the region query of every slot written counts them.
func TestTrajectoryOpWrite(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := "sqlite://" + filepath.Join(t.TempDir(), "w.db")
	const scale, seed = 0.001, 6
	g, err := trajectory.New(trajectory.Options{Scale: scale, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	users := int64(g.Users())
	slot7, _ := g.SlotRange(7) // Monday 00:35: every user once
	common := map[string]string{"db": dsn, "scale": fmt.Sprint(scale), "seed": fmt.Sprint(seed)}

	a, err := adapter.ForDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	db, err := a.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	st, err := db.(trajectory.Backend).Trajectory(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()

	var written []int64 // indexes written so far, repeats included
	for _, tc := range []struct {
		name  string
		opts  []string
		index int64
		count int64
	}{
		{"one record, --count defaults to 1", []string{"index", "0"}, 0, 1},
		{"a whole slot", []string{"index", fmt.Sprint(slot7), "count", fmt.Sprint(users)}, slot7, users},
		{"more than one write request", []string{"index", "2500", "count", "1203"}, 2500, 1203},
		{"the same slot again", []string{"index", fmt.Sprint(slot7), "count", fmt.Sprint(users)}, slot7, users},
		{"the last record", []string{"index", fmt.Sprint(g.Len() - 1), "count", "1"}, g.Len() - 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, stderr, err := runJob(t, trajectory.Name, "op write", with(common, tc.opts...))
			if err != nil {
				t.Fatalf("%v: %s", err, stderr)
			}
			lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
			if int64(len(lines)) != tc.count {
				t.Fatalf("%d lines printed, want %d:\n%s", len(lines), tc.count, out)
			}
			for j, line := range lines {
				i := tc.index + int64(j)
				r := g.Record(i)
				checkTrajOpRecordLine(t, line, i, trajectory.AppendRecordCSV(nil, &r))
				written = append(written, i)
			}

			// The store holds exactly what was written, cells included.
			c, err := st.Counts(ctx)
			if err != nil {
				t.Fatal(err)
			}
			cells := map[int64]bool{}
			type daySlot struct {
				day  trajectory.Weekday
				slot int
			}
			visits := map[daySlot]map[int64]int64{}
			for _, i := range written {
				r := g.Record(i)
				cells[r.Cell.ID] = true
				k := daySlot{r.Weekday, r.Slot()}
				if visits[k] == nil {
					visits[k] = map[int64]int64{}
				}
				visits[k][r.Cell.ID]++
			}
			if c.Records != int64(len(written)) || c.Cells != int64(len(cells)) {
				t.Fatalf("store holds %d records and %d cells, want %d and %d", c.Records, c.Cells, len(written), len(cells))
			}
			// The busiest cell of every slot written counts the records.
			for k, m := range visits {
				var want trajectory.Busiest
				for cell, n := range m {
					if n > want.Visits || (n == want.Visits && cell < want.Cell) {
						want = trajectory.Busiest{Cell: cell, Visits: n}
					}
				}
				got, ok, err := st.Region(ctx, k.day, k.slot)
				if err != nil || !ok || got != want {
					t.Fatalf("region %s %d: %+v %v %v, want %+v", k.day, k.slot, got, ok, err, want)
				}
			}
		})
	}
}

// checkTrajOpRecordLine compares one JSON line of op write with the
// records.csv line of the same record: the index, then every column of
// trajectory.RecordColumns under its own name and nothing else.
func checkTrajOpRecordLine(t *testing.T, line string, index int64, csvLine []byte) {
	t.Helper()
	var m map[string]any
	dec := json.NewDecoder(strings.NewReader(line))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("not a JSON line: %v\n%s", err, line)
	}
	fields, err := csv.NewReader(bytes.NewReader(csvLine)).Read()
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(m["index"]); got != fmt.Sprint(index) {
		t.Fatalf("index %s, want %d: %s", got, index, line)
	}
	if len(m) != len(trajectory.RecordColumns)+1 {
		t.Fatalf("%d keys, want index and the %d columns: %s", len(m), len(trajectory.RecordColumns), line)
	}
	for c, name := range trajectory.RecordColumns {
		var got string
		switch v := m[name].(type) {
		case string:
			got = v
		case bool:
			got = map[bool]string{false: "0", true: "1"}[v]
		case json.Number:
			got = v.String()
			if name == "latitude" || name == "longitude" {
				f, _ := v.Float64()
				got = strconv.FormatFloat(f, 'f', 6, 64)
			}
		default:
			t.Fatalf("column %s is %T %v: %s", name, v, v, line)
		}
		if got != fields[c] {
			t.Fatalf("record %d, %s = %q, the generator says %q\n%s\n%s", index, name, got, fields[c], line, csvLine)
		}
	}
}
