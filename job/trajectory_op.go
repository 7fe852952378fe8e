package job

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"

	"github.com/fieldbench/fieldbench/adapter"
	"github.com/fieldbench/fieldbench/redact"
	"github.com/fieldbench/fieldbench/workload/trajectory"
)

// trajOpStore opens the trajectory store of --db for op.
func trajOpStore(ctx context.Context, dsn string, open func(context.Context, string) (adapter.Adapter, adapter.DB, error)) (trajectory.Store, func(), error) {
	_, db, err := open(ctx, dsn)
	if err != nil {
		return nil, nil, err
	}
	b, err := trajBackend(db, dsn)
	if err != nil {
		db.Close()
		return nil, nil, err
	}
	st, err := b.Trajectory(ctx)
	if err != nil {
		db.Close()
		return nil, nil, err
	}
	return st, func() { st.Close(); db.Close() }, nil
}

// trajOpHit is one cell of a spatial answer as op prints it.
type trajOpHit struct {
	trajectory.Hit
	DistM *float64 `json:"dist_m,omitempty"`
}

// runQueryOp runs query name (distance, knn, range or region) once.
func (j *trajectoryJob) runQueryOp(ctx context.Context, env *Env, name string) error {
	op, _ := trajectory.ParseQueryOp(name)
	q := trajectory.Query{Op: op, At: trajectory.Point{X: j.x, Y: j.y}, Radius: j.radius, K: j.k, MaxDist: j.maxDist}
	if j.db == "" {
		return Usagef("op needs --db (the database to query), e.g. --db sqlite:///tmp/traj.db")
	}
	switch q.Op {
	case trajectory.OpDistance, trajectory.OpKNN:
		if !j.opts.Changed("x") || !j.opts.Changed("y") {
			return Usagef("op trajectory %s needs --x and --y (easting and northing in metres)", trajectory.Ops[q.Op])
		}
	case trajectory.OpRange:
		if j.triangle == "" {
			return Usagef(`op trajectory range needs --triangle "x1,y1,x2,y2,x3,y3"`)
		}
		t, err := trajectory.ParseTriangle(j.triangle)
		if err != nil {
			return Usagef("--triangle: %v", err)
		}
		q.Tri = t
	case trajectory.OpRegion:
		if j.weekday == "" || j.slot == "" {
			return Usagef("op trajectory region needs --weekday and --slot")
		}
		d, err := trajectory.ParseWeekday(j.weekday)
		if err != nil {
			return Usagef("--weekday: %v", err)
		}
		sl, err := trajectory.ParseSlot(j.slot)
		if err != nil {
			return Usagef("--slot: %v", err)
		}
		q.Day, q.Slot = d, sl
	}
	if err := q.Validate(); err != nil {
		return Usagef("%v", err)
	}
	st, done, err := trajOpStore(ctx, j.db, openExisting(trajectory.Name, "trajectory data"))
	if err != nil {
		return err
	}
	defer done()
	if c, err := st.Counts(ctx); err != nil {
		return err
	} else if c.Records == 0 {
		return Usagef("%s holds no trajectory data: load it first with 'fieldbench load trajectory --db %s'", redact.DSN(j.db), redact.DSN(j.db))
	}
	ans, err := q.Run(ctx, st)
	if err != nil {
		return fmt.Errorf("%s: %w", trajectory.Ops[q.Op], err)
	}
	return printTrajectoryAnswer(env.Stdout, env.Stderr, q, ans)
}

func printTrajectoryAnswer(w, stderr io.Writer, q trajectory.Query, a trajectory.Answer) error {
	enc := json.NewEncoder(w)
	if q.Op == trajectory.OpRegion {
		if !a.Found {
			fmt.Fprintf(stderr, "no location updates on %s at %s\n", q.Day, trajectory.SlotClock(q.Slot))
			return nil
		}
		return enc.Encode(struct {
			trajectory.Busiest
			Weekday string `json:"weekday"`
			Slot    int    `json:"slot"`
			Time    string `json:"time"`
		}{a.Busiest, q.Day.String(), q.Slot, trajectory.SlotClock(q.Slot)})
	}
	for _, h := range a.Hits {
		out := trajOpHit{Hit: h}
		if q.Op != trajectory.OpRange {
			d := math.Round(math.Sqrt(float64(trajectory.Dist2(q.At, h.Pos())))*10) / 10
			out.DistM = &d
		}
		if err := enc.Encode(out); err != nil {
			return err
		}
	}
	if len(a.Hits) == 0 {
		fmt.Fprintln(stderr, "no cell matches")
	}
	return nil
}

// trajOpWriteBatch is the most records op write sends in one write request.
const trajOpWriteBatch = trajectory.DefaultBatch

// trajOpRecord is a record as op write prints it: its index in the dataset
// and the study's 18 attributes, named like the columns of records.csv.
type trajOpRecord struct {
	Index        int64   `json:"index"`
	UserID       int64   `json:"user_id"`
	SiteID       int64   `json:"site_id"`
	Weekday      string  `json:"weekday"`
	Time         string  `json:"time"`
	ProfileID    int16   `json:"profile_id"`
	SegmentID    int16   `json:"segment_id"`
	GSM          bool    `json:"gsm"`
	UMTS         bool    `json:"umts"`
	LTE          bool    `json:"lte"`
	Easting      int64   `json:"easting"`
	Northing     int64   `json:"northing"`
	Latitude     float64 `json:"latitude"`
	Longitude    float64 `json:"longitude"`
	Municipality string  `json:"cell_municipality"`
	County       string  `json:"cell_county"`
	City         string  `json:"cell_city"`
	Postcode     string  `json:"cell_postcode"`
	Address      string  `json:"cell_address"`
}

func newTrajOpRecord(i int64, r *trajectory.Record) trajOpRecord {
	c := r.Cell
	return trajOpRecord{
		Index: i, UserID: r.User, SiteID: c.ID, Weekday: r.Weekday.String(), Time: r.Clock(),
		ProfileID: r.Profile, SegmentID: r.Segment, GSM: r.GSM(), UMTS: r.UMTS(), LTE: r.LTE(),
		Easting: c.Easting, Northing: c.Northing, Latitude: c.Lat, Longitude: c.Lon,
		Municipality: c.Municipality, County: c.County, City: c.City, Postcode: c.Postcode, Address: c.Address,
	}
}

// runWriteOp inserts records --index..--index+--count-1 and prints each.
func (j *trajectoryJob) runWriteOp(ctx context.Context, env *Env) error {
	if j.db == "" {
		return Usagef("op needs --db (the database to write to), e.g. --db sqlite:///tmp/traj.db")
	}
	n, err := trajectory.RecordsForScale(j.scale)
	if err != nil {
		return Usagef("--scale: %v", err)
	}
	if !j.opts.Changed("index") {
		return Usagef("op trajectory write needs --index (the first record, 0 to %d at --scale %g)", n-1, j.scale)
	}
	switch {
	case j.count < 1:
		return Usagef("--count must be at least 1 (got %d)", j.count)
	case j.index < 0 || j.index >= n:
		return Usagef("--index must be from 0 to %d at --scale %g (%d records; got %d)", n-1, j.scale, n, j.index)
	case j.count > n-j.index:
		return Usagef("--index %d --count %d goes past the last record %d at --scale %g: --count must be at most %d",
			j.index, j.count, n-1, j.scale, n-j.index)
	}
	st, done, err := trajOpStore(ctx, j.db, OpenDB)
	if err != nil {
		return err
	}
	defer done()
	g, err := j.generator()
	if err != nil {
		return err
	}
	cur := g.NewCursor()
	buf := make([]trajectory.Record, min(j.count, trajOpWriteBatch))
	enc := json.NewEncoder(env.Stdout)
	end := j.index + j.count
	for from := j.index; from < end; {
		if ctx.Err() != nil {
			return ErrInterrupted
		}
		k := cur.Fill(from, buf[:min(int64(len(buf)), end-from)])
		if k == 0 { // cannot happen after the checks above; never loop forever
			return fmt.Errorf("record %d is past the end of the dataset (%d records)", from, g.Len())
		}
		if err := st.Write(ctx, buf[:k]); err != nil {
			return fmt.Errorf("write records %d-%d: %w", from, from+int64(k)-1, err)
		}
		for i := range k {
			if err := enc.Encode(newTrajOpRecord(from+int64(i), &buf[i])); err != nil {
				return err
			}
		}
		from += int64(k)
	}
	return nil
}
