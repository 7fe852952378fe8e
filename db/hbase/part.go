package hbase

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/fieldbench/fieldbench/adapter"
	"github.com/fieldbench/fieldbench/workload/microblog"
)

var _ microblog.PartLoader = (*DB)(nil)

// mbPartsRow is the mb_meta row where PopulatePart records the parts
// loaded: one column m:I/N per part.
const mbPartsRow = "parts"

// tableCreation serializes the creation of tables by the parts this
// process loads: the gateway creates a table with PUT .../schema, which on
// a table that exists (created since this client found it absent) disables
// it, modifies it and enables it again, failing writes in between.
var tableCreation sync.Mutex

// PopulatePart implements microblog.PartLoader. Several processes, each
// with its own DB and no word from the others, may load parts of one
// dataset at once:
//
//   - the tables are created when absent, never dropped or recreated;
//   - the model is recorded by a check-and-put that writes it only when
//     no model is there, so the first part to start decides it and a part
//     of another model is refused with microblog.ErrModelMismatch;
//   - the part's rows are puts of fixed keys, retried a few times when a
//     put fails (see partPut);
//   - once they are acknowledged the part is recorded in mb_meta's parts
//     row, and the part that then reads all N parts recorded writes the
//     users and follows counts that mark the dataset whole (two finishing
//     together write the same). A row lives in one region server, which
//     orders its writes and reads: of two parts finishing together the
//     later sees both.
func (db *DB) PopulatePart(ctx context.Context, model microblog.Model, ds *microblog.Dataset, part microblog.Part) error {
	if _, err := microblog.ParseModel(string(model)); err != nil {
		return fmt.Errorf("hbase: %w: %w", err, adapter.ErrUnsupported)
	}
	if ds == nil {
		return errors.New("hbase: load part: nil dataset")
	}
	if err := part.Validate(ds); err != nil {
		return err
	}
	tableCreation.Lock()
	for _, t := range mbTables {
		if err := db.ensureTable(ctx, t.name, t.family); err != nil {
			tableCreation.Unlock()
			return err
		}
	}
	tableCreation.Unlock()
	parts, err := db.loadedParts(ctx)
	if err != nil {
		return err
	}
	if err := part.CheckRecorded(parts); err != nil {
		return fmt.Errorf("hbase: %w", err)
	}
	meta, _, err := db.getRow(ctx, mbMeta, "meta")
	if err != nil {
		return err
	}
	if have, ok := meta.get("m:model"); ok && string(have) != string(model) {
		return partMismatch(string(have), model)
	}
	if _, whole := meta.get("m:users"); whole && len(parts) == 0 {
		return fmt.Errorf("hbase: part %s: the dataset was loaded whole: %w", part, microblog.ErrPartLoaded)
	}
	if err := db.recordModel(ctx, model); err != nil {
		return err
	}
	s := &mbStore{db: db, model: model}
	if err := s.load(ctx, ds, part, db.partPut); err != nil {
		return fmt.Errorf("hbase %s: load part %s: %w", model, part, err)
	}
	rec := row{Key: []byte(mbPartsRow), Cells: []cell{{Column: []byte("m:" + part.String()), Value: []byte{}}}}
	if err := db.partPut(ctx, mbMeta, []row{rec}); err != nil {
		return fmt.Errorf("hbase: record part %s: %w", part, err)
	}
	if parts, err = db.loadedParts(ctx); err != nil {
		return err
	}
	if !part.Complete(parts) {
		return nil
	}
	counts := row{Key: []byte("meta"), Cells: []cell{
		{Column: []byte("m:users"), Value: []byte(strconv.Itoa(ds.Users))},
		{Column: []byte("m:follows"), Value: []byte(strconv.FormatInt(ds.Whole().Follows, 10))},
	}}
	if err := db.partPut(ctx, mbMeta, []row{counts}); err != nil {
		return fmt.Errorf("hbase: record the whole dataset's counts: %w", err)
	}
	return nil
}

// partMismatch is the error of a part of model loaded into a database
// that holds (or is being loaded with) the model have.
func partMismatch(have string, model microblog.Model) error {
	return fmt.Errorf("hbase: %w: the database holds (or is being loaded with) the %s model; load the %s model into a fresh database",
		microblog.ErrModelMismatch, have, model)
}

// loadedParts reads the parts recorded ("I/N").
func (db *DB) loadedParts(ctx context.Context) ([]string, error) {
	r, _, err := db.getRow(ctx, mbMeta, mbPartsRow)
	if err != nil {
		return nil, fmt.Errorf("hbase: read loaded parts: %w", err)
	}
	parts := make([]string, 0, len(r.Cells))
	for _, c := range r.Cells {
		if p, ok := strings.CutPrefix(string(c.Column), "m:"); ok {
			parts = append(parts, p)
		}
	}
	return parts, nil
}

// recordModel records model unless a model is recorded (check-and-put on
// the column's absence), and refuses another model recorded before.
func (db *DB) recordModel(ctx context.Context, model microblog.Model) error {
	col := []byte("m:model")
	ok, err := db.checkPut(ctx, mbMeta, "meta", []cell{{Column: col, Value: []byte(model)}}, cell{Column: col, Value: []byte{}})
	if err != nil || ok {
		return err
	}
	r, _, err := db.getRow(ctx, mbMeta, "meta", "m:model")
	if err != nil {
		return err
	}
	if have, _ := r.get("m:model"); string(have) != string(model) {
		return partMismatch(string(have), model)
	}
	return nil
}

// partPutTries is how many times partPut tries a put.
const partPutTries = 6

// partPut is putRows retried with a growing pause (0.5 s doubling, 15 s in
// all): a part's puts are idempotent, and another process creating a
// table this one found absent may make the gateway disable and enable it
// (see tableCreation), failing the puts for that moment.
func (db *DB) partPut(ctx context.Context, table string, rows []row) error {
	pause := 500 * time.Millisecond
	var err error
	for try := 1; ; try++ {
		if err = db.putRows(ctx, table, rows); err == nil || try == partPutTries {
			return err
		}
		select {
		case <-ctx.Done():
			return errors.Join(err, ctx.Err())
		case <-time.After(pause):
		}
		pause *= 2
	}
}
