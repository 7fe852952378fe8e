package cli_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/fieldbench/fieldbench/adapter"
	"github.com/fieldbench/fieldbench/internal/cli"
	"github.com/fieldbench/fieldbench/result"
	"github.com/fieldbench/fieldbench/workload/trajectory"

	_ "github.com/fieldbench/fieldbench/adapter/all"
)

func trajExec(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := cli.Execute(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestTrajectoryBadInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	res := filepath.Join(dir, "results")
	loaded := "sqlite://" + filepath.Join(dir, "loaded.db")
	if code, _, stderr := trajExec("load", "trajectory", "--db", loaded, "--scale", "0.0002"); code != 0 {
		t.Fatalf("load: exit %d %s", code, stderr)
	}
	empty := "sqlite://" + filepath.Join(dir, "empty.db")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"unknown mode", []string{"run", "trajectory", "--mode", "foo", "--results", res}, `unknown trajectory mode "foo"`},
		{"scale 0", []string{"run", "trajectory", "--scale", "0", "--results", res}, "scale must be positive"},
		{"negative scale", []string{"run", "trajectory", "--scale", "-1", "--results", res}, "scale must be positive"},
		{"scale too big", []string{"run", "trajectory", "--scale", "1000", "--results", res}, "above the maximum"},
		{"scale not a number", []string{"run", "trajectory", "--scale", "big"}, "invalid argument"},
		{"k 0 in run", []string{"run", "trajectory", "--k", "0", "--results", res}, "k must be 1"},
		{"negative radius", []string{"run", "trajectory", "--radius", "-5", "--results", res}, "radius must be"},
		{"batch 0", []string{"run", "trajectory", "--batch", "0", "--results", res}, "--batch must be at least 1"},
		{"clients 0", []string{"run", "trajectory", "--clients", "0", "--results", res}, "--clients must be at least 1"},
		{"repeat 0", []string{"run", "trajectory", "--repeat", "0", "--results", res}, "--repeat must be at least 1"},
		{"data without reset", []string{"run", "trajectory", "--db", loaded, "--results", res}, "pass --reset"},
		{"generate scale 0", []string{"generate", "trajectory", "--scale", "0", "--out", dir}, "scale must be positive"},
		{"generate without out", []string{"generate", "trajectory"}, "needs --out"},
		{"load negative scale", []string{"load", "trajectory", "--db", empty, "--scale", "-0.5"}, "scale must be positive"},
		{"load into loaded", []string{"load", "trajectory", "--db", loaded, "--scale", "0.0002"}, "already holds"},
		{"op without operation", []string{"op", "trajectory"}, "needs an operation: write, distance, knn, range, region"},
		{"op write without db", []string{"op", "trajectory", "write", "--index", "0"}, "needs --db"},
		{"op write without index", []string{"op", "trajectory", "write", "--db", empty, "--scale", "0.0002"}, "needs --index (the first record, 0 to 1296"},
		{"op write negative index", []string{"op", "trajectory", "write", "--db", empty, "--scale", "0.0002", "--index", "-1"}, "--index must be from 0 to 1296 at --scale 0.0002 (1297 records; got -1)"},
		{"op write index past the end", []string{"op", "trajectory", "write", "--db", empty, "--scale", "0.0002", "--index", "1297"}, "--index must be from 0 to 1296"},
		{"op write count 0", []string{"op", "trajectory", "write", "--db", empty, "--index", "0", "--count", "0"}, "--count must be at least 1 (got 0)"},
		{"op write negative count", []string{"op", "trajectory", "write", "--db", empty, "--index", "0", "--count", "-3"}, "--count must be at least 1 (got -3)"},
		{"op write count past the end", []string{"op", "trajectory", "write", "--db", empty, "--scale", "0.0002", "--index", "1290", "--count", "8"}, "goes past the last record 1296 at --scale 0.0002: --count must be at most 7"},
		{"op write scale 0", []string{"op", "trajectory", "write", "--db", empty, "--scale", "0", "--index", "0"}, "scale must be positive"},
		{"op write count not a number", []string{"op", "trajectory", "write", "--db", empty, "--index", "0", "--count", "many"}, "invalid argument"},
		{"op without db", []string{"op", "trajectory", "distance", "--x", "1", "--y", "2"}, "needs --db"},
		{"op distance without x", []string{"op", "trajectory", "distance", "--db", loaded, "--y", "2"}, "needs --x and --y"},
		{"op knn k 0", []string{"op", "trajectory", "knn", "--db", loaded, "--x", "1", "--y", "2", "--k", "0"}, "k must be 1"},
		{"op knn negative bound", []string{"op", "trajectory", "knn", "--db", loaded, "--x", "1", "--y", "2", "--max-dist", "-1"}, "max distance"},
		{"op triangle missing", []string{"op", "trajectory", "range", "--db", loaded}, "needs --triangle"},
		{"op triangle 5 values", []string{"op", "trajectory", "range", "--db", loaded, "--triangle", "1,2,3,4,5"}, "six whole numbers"},
		{"op triangle not numbers", []string{"op", "trajectory", "range", "--db", loaded, "--triangle", "a,b,c,d,e,f"}, "not a whole number"},
		{"op triangle flat", []string{"op", "trajectory", "range", "--db", loaded, "--triangle", "0,0,1,1,2,2"}, "zero area"},
		{"op weekday 9", []string{"op", "trajectory", "region", "--db", loaded, "--weekday", "9", "--slot", "1"}, "weekday 9 out of range"},
		{"op slot 300", []string{"op", "trajectory", "region", "--db", loaded, "--weekday", "1", "--slot", "300"}, "bad time slot"},
		{"op region without slot", []string{"op", "trajectory", "region", "--db", loaded, "--weekday", "1"}, "needs --weekday and --slot"},
		{"op on an empty database", []string{"op", "trajectory", "region", "--db", empty, "--weekday", "1", "--slot", "1"}, "holds no trajectory data"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := trajExec(tc.args...)
			if code != cli.ExitUsage {
				t.Fatalf("exit %d, want %d (usage) for %v: %s", code, cli.ExitUsage, tc.args, stderr)
			}
			if !strings.Contains(stderr, tc.want) {
				t.Fatalf("stderr %q does not say %q", stderr, tc.want)
			}
		})
	}
	if entries, _ := os.ReadDir(res); len(entries) > 0 {
		t.Fatalf("refused runs left %d run directories", len(entries))
	}
}

// TestTrajectoryRunEndToEnd runs both modes at a tiny scale into a given
// database, checks the result file (throughput points per mode and request
// type, per-operation counts, no errors, a report), then queries the
// database the run left with op and compares with the reference.
func TestTrajectoryRunEndToEnd(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	res := filepath.Join(dir, "results")
	dsn := "sqlite://" + filepath.Join(dir, "t.db")
	code, out, stderr := trajExec("run", "trajectory", "--db", dsn, "--scale", "0.001", "--seed", "4",
		"--queries", "4", "--repeat", "3", "--batch", "250", "--results", res)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, stderr)
	}
	entries, err := os.ReadDir(res)
	if err != nil || len(entries) != 1 {
		t.Fatalf("want one run directory: %v %v", entries, err)
	}
	run, err := result.Read(filepath.Join(res, entries[0].Name()))
	if err != nil {
		t.Fatal(err)
	}
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
	}
	for _, e := range []string{"sequential write", "sequential knn", "reset", "random write", "random region"} {
		if !events[e] {
			t.Fatalf("no %q event: %v", e, events)
		}
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
		args []string
		want trajectory.Answer
	}{
		{[]string{"distance", "--x", x, "--y", y, "--radius", "3000"}, ref.Answer(trajectory.Query{Op: trajectory.OpDistance, At: c.Pos(), Radius: 3000})},
		{[]string{"knn", "--x", x, "--y", y, "--k", "3", "--max-dist", "100000"}, ref.Answer(trajectory.Query{Op: trajectory.OpKNN, At: c.Pos(), K: 3, MaxDist: 100000})},
		{[]string{"range", "--triangle", fmt.Sprintf("%d,%d,%d,%d,%d,%d", c.Easting-5000, c.Northing-5000, c.Easting+5000, c.Northing-5000, c.Easting, c.Northing+5000)},
			ref.Answer(trajectory.Query{Op: trajectory.OpRange, Tri: trajectory.Triangle{{X: c.Easting - 5000, Y: c.Northing - 5000}, {X: c.Easting + 5000, Y: c.Northing - 5000}, {X: c.Easting, Y: c.Northing + 5000}}})},
		{[]string{"region", "--weekday", "tue", "--slot", "12:00"}, ref.Answer(trajectory.Query{Op: trajectory.OpRegion, Day: trajectory.Tuesday, Slot: 144})},
	} {
		args := append([]string{"op", "trajectory", tc.args[0], "--db", dsn}, tc.args[1:]...)
		code, out, stderr := trajExec(args...)
		if code != 0 {
			t.Fatalf("%v: exit %d %s", args, code, stderr)
		}
		var got trajectory.Answer
		sc := bufio.NewScanner(strings.NewReader(out))
		for sc.Scan() {
			if tc.args[0] == "region" {
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
			t.Fatalf("%v printed %s, reference %s", args, got, tc.want)
		}
	}

	// Run again into the same database: refused without --reset, fine with.
	if code, _, stderr := trajExec("run", "trajectory", "--db", dsn, "--scale", "0.0005", "--mode", "random", "--queries", "2", "--repeat", "1", "--reset", "--results", res); code != 0 {
		t.Fatalf("rerun with --reset: exit %d %s", code, stderr)
	}
}

func TestTrajectoryGenerateAndList(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	code, out, stderr := trajExec("generate", "trajectory", "--scale", "0.001", "--seed", "2", "--out", dir)
	if code != 0 || !strings.Contains(out, "records/s") || !strings.Contains(out, "6483 records") {
		t.Fatalf("generate: exit %d\n%s\n%s", code, out, stderr)
	}
	b, err := os.ReadFile(filepath.Join(dir, trajectory.RecordsFile))
	if err != nil || bytes.Count(b, []byte("\n")) != 6484 {
		t.Fatalf("records.csv: %d lines, %v", bytes.Count(b, []byte("\n")), err)
	}
	if _, err := os.Stat(filepath.Join(dir, trajectory.CellsFile)); err != nil {
		t.Fatal(err)
	}
	code, out, _ = trajExec("list")
	for _, want := range []string{"trajectory", "write, distance, knn, range, region", "--max-dist", "(default 2000)", "--scale", "(default 0.01)", "--mode", "(default both)"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Fatalf("list lacks %q:\n%s", want, out)
		}
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
	common := []string{"op", "trajectory", "write", "--db", dsn, "--scale", fmt.Sprint(scale), "--seed", fmt.Sprint(seed)}

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
		args  []string
		index int64
		count int64
	}{
		{"one record, --count defaults to 1", []string{"--index", "0"}, 0, 1},
		{"a whole slot", []string{"--index", fmt.Sprint(slot7), "--count", fmt.Sprint(users)}, slot7, users},
		{"more than one write request", []string{"--index", "2500", "--count", "1203"}, 2500, 1203},
		{"the same slot again", []string{"--index", fmt.Sprint(slot7), "--count", fmt.Sprint(users)}, slot7, users},
		{"the last record", []string{"--index", fmt.Sprint(g.Len() - 1), "--count", "1"}, g.Len() - 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, stderr := trajExec(append(append([]string{}, common...), tc.args...)...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
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
