package wiki

import (
	"bufio"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
)

// WriteFile streams every article of g to path as JSON lines (format
// "jsonl") or CSV with a header row ("csv"), and returns their size
// statistics (sizes are kept, 8 bytes an article, for the percentiles). It
// stops with ctx's error when ctx ends.
func (g *Generator) WriteFile(ctx context.Context, path, format string) (SizeStats, error) {
	file, err := os.Create(path)
	if err != nil {
		return SizeStats{}, fmt.Errorf("create %s: %w", path, err)
	}
	bw := bufio.NewWriterSize(file, 1<<20)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	cw := csv.NewWriter(bw)
	if format == "csv" {
		err = cw.Write([]string{"id", "title", "body"})
	}
	sizes := make([]int, 0, g.Articles)
	for id := int64(1); id <= g.Articles && err == nil; id++ {
		if id%4096 == 0 && ctx.Err() != nil {
			err = ctx.Err()
			break
		}
		a := g.Article(id)
		sizes = append(sizes, len(a.Body))
		if format == "csv" {
			err = cw.Write([]string{strconv.FormatInt(a.ID, 10), a.Title, a.Body})
		} else {
			err = enc.Encode(a)
		}
	}
	cw.Flush()
	err = errors.Join(err, cw.Error(), bw.Flush(), file.Close())
	if err != nil {
		return SizeStats{}, fmt.Errorf("write %s: %w", path, err)
	}
	return NewSizeStats(sizes), nil
}
