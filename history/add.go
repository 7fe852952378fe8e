package history

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/fieldbench/fieldbench/redact"
	"github.com/fieldbench/fieldbench/report"
	"github.com/fieldbench/fieldbench/result"
)

// AddStats is what AddPaths did: `history add` prints it, and so does
// every command that records its runs as they finish (--history).
type AddStats struct {
	// Where is the history written to, its password redacted.
	Where                 string
	Added, Known, Skipped int
	// Series are the IDs of the series the runs found belong to.
	Series map[string]bool
	// ArgsWithNothing are the paths that gave no run at all: `history
	// add` names them when nothing could be recorded.
	ArgsWithNothing []string
}

func (a AddStats) String() string {
	return fmt.Sprintf("%d run(s) added to %s, %d already there, %d skipped (%d series)", a.Added, a.Where, a.Known, a.Skipped, len(a.Series))
}

// addBatch bounds the runs held in memory (each with its histograms)
// before they are written in one transaction.
const addBatch = 100

// selfReason is Source's reason for skipping the history's own file.
const selfReason = "the history database itself"

// AddPaths records in the history at target every run found under paths
// (Source): a file that cannot be read, a shard, a run that did not
// finish is skipped with its reason on log; damaged lines are warned of
// as every reader of result files does (report.WarnSkipped). The history
// is opened (and a new SQLite file made) only once there is a run to add,
// so an add that finds nothing leaves no new file. Open's refusals
// (ErrNewerSchema, ErrNoHistory) are returned as they are: the caller
// decides that they are bad input.
func AddPaths(ctx context.Context, log io.Writer, target, commit string, paths []string) (AddStats, error) {
	self, err := SQLitePath(target)
	if err != nil {
		return AddStats{}, err
	}
	where := self
	if where == "" {
		where = redact.DSN(target)
	}
	var s *Store
	defer func() {
		if s != nil {
			s.Close()
		}
	}()
	st := AddStats{Where: where, Series: map[string]bool{}}
	var batch []Run
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		if s == nil {
			if s, err = Open(ctx, target, true); err != nil {
				return err
			}
			st.Where = s.Where
		}
		got, err := s.Add(ctx, batch)
		if err != nil {
			return err
		}
		for _, a := range got {
			if a.New {
				st.Added++
			} else {
				st.Known++
			}
		}
		batch = batch[:0]
		return nil
	}
	skip := func(path, reason string) {
		st.Skipped++
		fmt.Fprintf(log, "fieldbench: skipped %s: %s\n", path, reason)
	}
	for _, p := range paths {
		if ctx.Err() != nil {
			break
		}
		files, skipped, err := Source(p, self)
		if err != nil {
			skip(p, err.Error())
			st.ArgsWithNothing = append(st.ArgsWithNothing, p)
			continue
		}
		for _, sk := range skipped {
			if sk.Reason == selfReason {
				continue
			}
			skip(sk.Path, sk.Reason)
		}
		if len(files) == 0 && len(skipped) == 0 {
			skip(p, "no "+result.FileName+" in it or under it (not a run directory, or runs stopped before they measured)")
		}
		recorded := 0
		for _, f := range files {
			r, err := result.Read(f)
			if err != nil {
				skip(f, strings.TrimPrefix(err.Error(), "read result "+f+": "))
				continue
			}
			report.WarnSkipped(log, r)
			rec, err := FromRun(r, commit)
			if err != nil {
				skip(f, err.Error())
				continue
			}
			recorded++
			st.Series[rec.Series] = true
			batch = append(batch, rec)
			if len(batch) >= addBatch {
				if err := flush(); err != nil {
					return st, err
				}
			}
		}
		if recorded == 0 && !onlySelf(skipped) {
			st.ArgsWithNothing = append(st.ArgsWithNothing, p)
		}
	}
	if err := flush(); err != nil {
		return st, err
	}
	return st, ctx.Err()
}

// onlySelf: the path was the history's own file (results/* names it),
// which is no argument that gave nothing.
func onlySelf(skipped []Skip) bool {
	return len(skipped) > 0 && skipped[0].Reason == selfReason
}

// DirNames are the names in dir (none when it cannot be read): taken
// before a command that makes run directories, so NewDirs can tell
// afterwards which runs it made to record.
func DirNames(dir string) map[string]bool {
	out := map[string]bool{}
	list, _ := os.ReadDir(dir)
	for _, e := range list {
		out[e.Name()] = true
	}
	return out
}

// NewDirs are the directories of dir, named with part, that were not in
// before (DirNames): what a command made there.
func NewDirs(dir string, before map[string]bool, part string) []string {
	var out []string
	list, _ := os.ReadDir(dir)
	for _, e := range list {
		if e.IsDir() && !before[e.Name()] && strings.Contains(e.Name(), part) {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	return out
}
