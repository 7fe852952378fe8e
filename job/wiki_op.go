package job

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/fieldbench/fieldbench/redact"
	"github.com/fieldbench/fieldbench/workload/wiki"
)

// wikiOpOutput is what op wiki prints: sizes in bytes; body only for read.
type wikiOpOutput struct {
	ID         int64   `json:"id"`
	Title      string  `json:"title"`
	SizeBefore *int    `json:"size_before,omitempty"`
	Size       int     `json:"size"`
	Truncated  bool    `json:"truncated,omitempty"`
	Body       *string `json:"body,omitempty"`
}

// opPreview is how much of a body op wiki read prints without --full.
const opPreview = 300

func (j *wikiJob) runOp(ctx context.Context, env *Env, op string) error {
	dsn, id := j.db, j.id
	if dsn == "" {
		return Usagef("op needs --db (the database to query), e.g. --db sqlite:///tmp/wiki.db")
	}
	if id < 1 {
		return Usagef("op wiki %s needs --id (an article id from 1)", op)
	}
	_, _, store, closeAll, err := openWikiStore(ctx, dsn, openExisting(wiki.Name, "wiki articles"))
	if err != nil {
		return err
	}
	defer closeAll()
	a, err := store.Read(ctx, id)
	if errors.Is(err, wiki.ErrNotFound) {
		c, cerr := store.Counts(ctx)
		if cerr != nil || c.Articles == 0 {
			return Usagef("%s holds no wiki articles: load them first with 'fieldbench load wiki --db %s'", redact.DSN(dsn), redact.DSN(dsn))
		}
		return Usagef("article %d does not exist (the database has articles 1..%d)", id, c.MaxID)
	}
	if err != nil {
		return fmt.Errorf("read: %w", err)
	}
	out := wikiOpOutput{ID: a.ID, Title: a.Title, Size: len(a.Body)}
	switch op {
	case "read":
		body := a.Body
		if !j.full && len(body) > opPreview {
			cut := opPreview
			for cut > 0 && !utf8.RuneStart(body[cut]) {
				cut--
			}
			body = body[:cut]
			out.Truncated = true
		}
		out.Body = &body
	case "update":
		if err := store.Update(ctx, id, a.Body+"1"); err != nil {
			return fmt.Errorf("update: %w", err)
		}
		before := len(a.Body)
		out.SizeBefore, out.Size = &before, before+1
	}
	enc := json.NewEncoder(env.Stdout)
	enc.SetEscapeHTML(false)
	return enc.Encode(out)
}
