package couchbase

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/couchbase/gocb/v2"

	"github.com/fieldbench/fieldbench/adapter"
	"github.com/fieldbench/fieldbench/workload/microblog"
)

var _ microblog.PartLoader = (*DB)(nil)

// kindParts is the kind of the document listing the parts loaded,
// PREFIX:mb:parts {parts: ["I/N", ...]}.
const kindParts = "mp"

// mbParts is the parts document.
type mbParts struct {
	Parts []string `json:"parts"`
}

func (db *DB) partsKey() string { return db.key("mb", "parts") }

// PopulatePart implements microblog.PartLoader (denormalized and
// normalized; async is not offered). Several processes, each with its own
// DB and no word from the others, may load parts of one dataset under one
// prefix at once:
//
//   - the model is recorded by inserting the meta document (without
//     counts), which fails when it exists: the first part to start decides
//     the model, and a part of another model is refused with
//     microblog.ErrModelMismatch;
//   - the part's documents are upserts of documents whole within the part,
//     and with timeline=doc appends to the followers' timeline documents
//     that mark them in the same atomic mutation (appendTimelines);
//     nothing is removed;
//   - once they are acknowledged the part is added to the parts document
//     (a sub-document add-unique, atomic on the server), and the part that
//     then reads all N recorded writes the stats and the meta document's
//     counts that mark the dataset whole (two finishing together write
//     the same).
func (db *DB) PopulatePart(ctx context.Context, model microblog.Model, ds *microblog.Dataset, part microblog.Part) error {
	if _, err := microblog.ParseModel(string(model)); err != nil {
		return fmt.Errorf("couchbase: %w: %w", adapter.ErrUnsupported, err)
	}
	if model == microblog.Async {
		return fmt.Errorf("couchbase: the async model is not offered (see Microblog): %w", adapter.ErrUnsupported)
	}
	if ds == nil {
		return errors.New("couchbase: load part: nil dataset")
	}
	if err := part.Validate(ds); err != nil {
		return err
	}
	parts, err := db.loadedParts(ctx)
	if err != nil {
		return err
	}
	if err := part.CheckRecorded(parts); err != nil {
		return fmt.Errorf("couchbase: prefix %s: %w", db.cfg.Prefix, err)
	}
	meta, err := db.meta(ctx)
	if err != nil {
		return err
	}
	if meta != nil && meta.Model != string(model) {
		return partMismatch(db.cfg.Prefix, meta.Model, model)
	}
	if meta != nil && meta.Users > 0 && len(parts) == 0 {
		return fmt.Errorf("couchbase: part %s: the dataset was loaded whole: %w", part, microblog.ErrPartLoaded)
	}
	if meta == nil {
		if err := db.recordModel(ctx, model); err != nil {
			return err
		}
	}
	if err := db.ensureDesign(ctx); err != nil {
		return err
	}
	s := &mbStore{db: db, model: model}
	if err := s.load(ctx, ds, part, true); err != nil {
		return fmt.Errorf("couchbase %s: load part %s: %w", model, part, err)
	}
	_, err = db.col.MutateIn(db.partsKey(), []gocb.MutateInSpec{
		gocb.UpsertSpec("fb", db.cfg.Prefix, nil),
		gocb.UpsertSpec("k", kindParts, nil),
		gocb.ArrayAddUniqueSpec("parts", part.String(), &gocb.ArrayAddUniqueSpecOptions{CreatePath: true}),
	}, s.mutateOptions(ctx))
	if err != nil && !errors.Is(err, gocb.ErrPathExists) {
		return fmt.Errorf("couchbase: record part %s: %w", part, err)
	}
	if parts, err = db.loadedParts(ctx); err != nil {
		return err
	}
	if !part.Complete(parts) {
		return nil
	}
	// The whole dataset's tweets have ids 1..Whole().Tweets.
	whole := ds.Whole()
	p := db.cfg.Prefix
	err = db.writeAll(ctx, []string{db.statsKey(), db.metaKey()}, []any{
		mbStats{FB: p, K: kindStats, N: whole.Tweets, Max: whole.Tweets},
		mbMeta{FB: p, K: kindMeta, Model: string(model), Users: whole.Users, Follows: whole.Follows},
	})
	if err != nil {
		return fmt.Errorf("couchbase: record the whole dataset's counts: %w", err)
	}
	return nil
}

// partMismatch is the error of a part of model loaded under a prefix that
// holds (or is being loaded with) the model have.
func partMismatch(prefix, have string, model microblog.Model) error {
	return fmt.Errorf("couchbase: prefix %s holds (or is being loaded with) the %s model, not %s (use another prefix=): %w", prefix, have, model, microblog.ErrModelMismatch)
}

// loadedParts reads the parts recorded ("I/N").
func (db *DB) loadedParts(ctx context.Context) ([]string, error) {
	res, err := db.col.Get(db.partsKey(), &gocb.GetOptions{Context: ctx})
	if errors.Is(err, gocb.ErrDocumentNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("couchbase: read loaded parts: %w", err)
	}
	var ps mbParts
	if err := res.Content(&ps); err != nil {
		return nil, fmt.Errorf("couchbase: loaded parts: %w", err)
	}
	return ps.Parts, nil
}

// recordModel inserts the meta document with model and no counts unless
// one is there, and refuses another model recorded before.
func (db *DB) recordModel(ctx context.Context, model microblog.Model) error {
	meta := mbMeta{FB: db.cfg.Prefix, K: kindMeta, Model: string(model)}
	_, err := db.col.Insert(db.metaKey(), meta, &gocb.InsertOptions{Context: ctx})
	if err == nil {
		return nil
	}
	if !errors.Is(err, gocb.ErrDocumentExists) {
		return fmt.Errorf("couchbase: record the microblog model: %w", err)
	}
	have, err := db.meta(ctx)
	if err != nil {
		return err
	}
	if have == nil || have.Model != string(model) {
		h := ""
		if have != nil {
			h = have.Model
		}
		return partMismatch(db.cfg.Prefix, h, model)
	}
	return nil
}

// mutateOptions are the options of a sub-document mutation that creates
// the document when absent, with the DSN's durability.
func (s *mbStore) mutateOptions(ctx context.Context) *gocb.MutateInOptions {
	o := &gocb.MutateInOptions{Context: ctx, StoreSemantic: gocb.StoreSemanticsUpsert,
		PersistTo: s.db.cfg.PersistTo, ReplicateTo: s.db.cfg.ReplicateTo}
	if s.db.cfg.Durability != "" {
		o.DurabilityLevel = durabilities[s.db.cfg.Durability]
	}
	return o
}

// appendChunk is the most entries one mutation appends: a sub-document
// request carries at most 16 operations, 3 of which set fb, k and the
// mark.
const appendChunk = 13

// appendTimelines appends a part's entries to each follower's timeline
// document (timeline=doc), 32 documents at a time, in chunks of
// appendChunk entries, one entry per array append (CouchbaseMock appends
// a multi-value append's values as one array). One atomic mutation per
// chunk appends its entries and inserts the path pp.pIcJ (part I, chunk
// J), which fails when it exists: a part loaded again after it failed
// half way (it was not recorded) finds the chunks it had written marked
// and leaves them, so no entry is appended twice. The chunks of a part are
// the same at every load: its entries in the dataset's order.
func (s *mbStore) appendTimelines(ctx context.Context, part microblog.Part, tls map[int64][]mbTLEntry) error {
	type chunk struct {
		owner   int64
		mark    string
		entries []mbTLEntry
	}
	var chunks []chunk
	for u, es := range tls {
		for j := 0; j*appendChunk < len(es); j++ {
			chunks = append(chunks, chunk{u, "pp.p" + strconv.Itoa(part.I) + "c" + strconv.Itoa(j),
				es[j*appendChunk : min((j+1)*appendChunk, len(es))]})
		}
	}
	return parallel(ctx, len(chunks), func(i int) error {
		c := chunks[i]
		specs := []gocb.MutateInSpec{
			gocb.UpsertSpec("fb", s.db.cfg.Prefix, nil),
			gocb.UpsertSpec("k", kindTLDoc, nil),
			gocb.InsertSpec(c.mark, true, &gocb.InsertSpecOptions{CreatePath: true}),
		}
		for _, e := range c.entries {
			specs = append(specs, gocb.ArrayAppendSpec("e", e, &gocb.ArrayAppendSpecOptions{CreatePath: true}))
		}
		_, err := s.db.col.MutateIn(s.tlDocKey(c.owner), specs, s.mutateOptions(ctx))
		if errors.Is(err, gocb.ErrPathExists) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("append to the timeline of %d: %w", c.owner, err)
		}
		return nil
	})
}
