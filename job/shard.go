package job

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/fieldbench/fieldbench/merge"
	"github.com/fieldbench/fieldbench/result"
)

// shard is this process's part of a run spread over several machines
// (--shard I/N): each shard computes its own share from (options, I, N)
// alone, with no coordinator, as k6's execution segments do. weights
// (--split) make the shares uneven: the ingest study's 8 sources over two
// machines as 5 + 3 is --split 5,3.
type shard struct {
	i, n    int
	weights []int // nil: equal shares
}

// parseShard reads --shard ("" is the whole run: shard 0 of 1).
func parseShard(s string) (shard, error) {
	if s == "" {
		return shard{i: 0, n: 1}, nil
	}
	i, n, err := merge.ParseShard(s)
	if err != nil {
		return shard{}, Usagef("--shard: %v", err)
	}
	return shard{i: i, n: n}, nil
}

// shardOf reads --shard, or --shards N with the index from
// JOB_COMPLETION_INDEX (what a Kubernetes Indexed Job sets in each pod).
func shardOf(spec string, shards int) (shard, error) {
	if shards == 0 {
		return parseShard(spec)
	}
	if spec != "" {
		return shard{}, Usagef("give --shard I/N or --shards N, not both")
	}
	idx, ok := os.LookupEnv("JOB_COMPLETION_INDEX")
	if !ok {
		return shard{}, Usagef("--shards %d reads the shard index from JOB_COMPLETION_INDEX, which is not set (outside Kubernetes use --shard I/N)", shards)
	}
	return parseShard(idx + "/" + strconv.Itoa(shards))
}

// withSplit sets the shares' weights from --split ("" equal shares): one
// positive whole number per shard.
func (sh shard) withSplit(split string) (shard, error) {
	if split == "" {
		return sh, nil
	}
	parts := strings.Split(split, ",")
	if len(parts) != sh.n {
		return sh, Usagef("--split %s has %d weights for %d shards: give one per shard, e.g. --split 5,3 for 2 shards", split, len(parts), sh.n)
	}
	w := make([]int, len(parts))
	for k, p := range parts {
		v, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || v < 1 {
			return sh, Usagef("--split %s: weight %q is not a whole number from 1", split, p)
		}
		w[k] = v
	}
	sh.weights = w
	return sh, nil
}

func (sh shard) sharded() bool { return sh.n > 1 }

// share is the part [lo, hi) of total items (clients, sources, threads,
// batches) that is this shard's: contiguous, in proportion to the weights
// (equal shares differ by at most one), and together exactly the total.
func (sh shard) share(total int) (lo, hi int) {
	l, h := sh.share64(int64(total))
	return int(l), int(h)
}

// everyShare is this shard's share [lo, hi) of total items (clients,
// threads, sources) once it has checked every shard's: a shard whose
// share is empty refuses, and so must every other, since they would wait
// for it (for shard 0's load, at a barrier, for its records) until their
// limit. Each shard computes every share from (options, i, n) alone, so
// all refuse at once, with the same words. flag names the option that
// sets total ("--clients").
func (sh shard) everyShare(total int, items, flag string) (lo, hi int, err error) {
	for k := range sh.n {
		other := sh
		other.i = k
		if l, h := other.share(total); l == h {
			if !sh.sharded() {
				return 0, 0, Usagef("%s %d: no %s to run", flag, total, items)
			}
			return 0, 0, Usagef("shard %d/%d's share of the %d %s is empty, so every shard of the run refuses (none waits for it): give %s %d or more for %d equal shares, use fewer shards, or a --split that gives every shard some",
				k, sh.n, total, items, flag, sh.n, sh.n)
		}
	}
	lo, hi = sh.share(total)
	return lo, hi, nil
}

// share64 is share for counts beyond int (records, articles).
func (sh shard) share64(total int64) (lo, hi int64) {
	if sh.weights == nil {
		return int64(sh.i) * total / int64(sh.n), int64(sh.i+1) * total / int64(sh.n)
	}
	var before, sum int64
	for k, w := range sh.weights {
		if k < sh.i {
			before += int64(w)
		}
		sum += int64(w)
	}
	upto := before + int64(sh.weights[sh.i])
	return total * before / sum, total * upto / sum
}

// record writes the shard into a run's header, so merge can check it: the
// shard, its share of items, and the split (a common option, so shards of
// different splits are refused as different runs).
func (sh shard) record(h *result.Header, items string, lo, hi int) {
	if !sh.sharded() {
		return
	}
	h.Options[merge.ShardOption] = fmt.Sprintf("%d/%d", sh.i, sh.n)
	h.Options["shard_"+items] = hi - lo
	if sh.weights != nil {
		ws := make([]string, len(sh.weights))
		for k, w := range sh.weights {
			ws[k] = strconv.Itoa(w)
		}
		h.Options["split"] = strings.Join(ws, ",")
	}
}

// shardFlags are the options of every command that runs as a shard,
// declared once per job by declare.
type shardFlags struct {
	shard   string
	shards  int
	split   string
	startAt string
	barrier string
}

// declareStart declares --start-at of verbs.
func (f *shardFlags) declareStart(o *Opts, verbs ...string) {
	o.String(&f.startAt, "start-at", "", "start the measured run at this wall-clock time (RFC 3339, e.g. $(date -u -d '+5 min' +%FT%TZ)), so shards on several machines start together; at most "+maxStartAheadText+"; a shard ready up to 10 min after it starts late (a start older or further ahead is refused); how late each started is in its result", verbs...)
}

// declare declares --shard, --shards and --split of verbs (an option is
// declared once per job, so every verb's share is said in one text: share
// says what a shard takes its share of, "the clients and of --rate").
func (f *shardFlags) declare(o *Opts, share string, verbs ...string) {
	o.String(&f.shard, "shard", "", "run as shard I of N (e.g. 0/4) of a run spread over machines: this shard does its share of "+share+"; merge the shards' results with 'fieldbench merge' (docs/shards.md)", verbs...)
	o.Int(&f.shards, "shards", 0, "run as one of N shards whose index is in JOB_COMPLETION_INDEX (a Kubernetes Indexed Job; see 'fieldbench kube job'): the same as --shard $JOB_COMPLETION_INDEX/N", verbs...)
	o.String(&f.split, "split", "", "with --shard/--shards: uneven shares, one weight per shard (e.g. --split 5,3: 8 sources over 2 machines as 5 + 3); default equal shares", verbs...)
}

// declareBarrier declares --barrier for commands whose shards must meet
// more than once (a sweep resets the database before every run).
func (f *shardFlags) declareBarrier(o *Opts, verbs ...string) {
	o.String(&f.barrier, "barrier", "", "with --shard/--shards: a directory every shard sees (a shared volume) where the shards meet before each run, so shard 0 resets the database only once all have finished; required by a sharded sweep", verbs...)
}

// resolve reads the shard options: the shard (with its split) and the
// common start (zero when none). db is the run's --db, which a shard needs.
func (f *shardFlags) resolve(db string) (shard, time.Time, error) {
	sh, err := shardOf(f.shard, f.shards)
	if err != nil {
		return sh, time.Time{}, err
	}
	if err := sharedDB(sh, db); err != nil {
		return sh, time.Time{}, err
	}
	if f.split != "" && !sh.sharded() {
		return sh, time.Time{}, Usagef("--split needs --shard I/N or --shards N with N above 1")
	}
	if sh, err = sh.withSplit(f.split); err != nil {
		return sh, time.Time{}, err
	}
	at, err := parseStartAt(f.startAt, time.Now(), LateStartGrace)
	return sh, at, err
}

// startTogether waits for the common start (when given), recording it in
// the header's options; call it before the measured run starts.
func startTogether(ctx context.Context, h *result.Header, at time.Time, c clock, progress func(string)) error {
	if at.IsZero() {
		return nil
	}
	h.Options["start_at"] = at.UTC().Format(time.RFC3339Nano)
	if late := c.Now().Sub(at); late > 0 {
		progress(fmt.Sprintf("fieldbench: warning: the common start at %s passed %s before this shard was ready: it starts late (start_late_ms in its result)\n",
			h.Options["start_at"], late.Round(time.Millisecond)))
		return nil
	}
	return waitStart(ctx, at, c, progress)
}

// MaxStartAhead bounds --start-at: a common start further ahead is a slip
// (a year, a month typed wrong) that would keep every shard waiting, not
// a plan; a start in the past could not be common.
const MaxStartAhead = 24 * time.Hour

// maxStartAheadText is MaxStartAhead as help texts say it ("24 h ahead").
var maxStartAheadText = fmt.Sprintf("%g h ahead", MaxStartAhead.Hours())

// LateStartGrace is how long after --start-at a shard may still start
// (late, with its lateness in its result): a pod that Kubernetes schedules
// or pulls its image for a little after the common start runs rather than
// failing its Job. A start older than that is a slip (yesterday's time
// pasted), refused.
const LateStartGrace = 10 * time.Minute

// CheckStartAt refuses a --start-at that is not ahead of now or more than
// MaxStartAhead ahead: what 'kube job' asks before printing a Job whose
// pods will wait for it (a shard itself allows LateStartGrace).
func CheckStartAt(s string, now time.Time) error {
	_, err := parseStartAt(s, now, 0)
	return err
}

// parseStartAt reads --start-at: an RFC 3339 wall-clock time ("" none)
// at most late before now and at most MaxStartAhead after it.
func parseStartAt(s string, now time.Time, late time.Duration) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, Usagef("--start-at %q: want an RFC 3339 time such as %s", s, now.Add(10*time.Minute).UTC().Format(time.RFC3339))
	}
	switch d := t.Sub(now); {
	case d <= -late || (late == 0 && d <= 0):
		return time.Time{}, Usagef("--start-at %s is in the past (%s ago): the shards could not start together at it; give a time ahead, such as %s",
			s, (-d).Round(time.Second), now.Add(10*time.Minute).UTC().Format(time.RFC3339))
	case d > MaxStartAhead:
		ahead := d.Round(time.Minute).String()
		if d >= 48*time.Hour {
			ahead = fmt.Sprintf("%.0f days", d.Hours()/24)
		}
		return time.Time{}, Usagef("--start-at %s is %s ahead, more than %s ahead: a common start is a time the shards wait for, at most %s",
			s, ahead, MaxStartAhead, maxStartAheadText)
	}
	return t, nil
}

// clock is the time a wait reads and sleeps on: the machine's, or a
// test's (no test waits for real time to pass).
type clock interface {
	Now() time.Time
	After(d time.Duration) <-chan time.Time
}

// wallClock is the machine's clock.
type wallClock struct{}

func (wallClock) Now() time.Time                         { return time.Now() }
func (wallClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// startNoticeEvery is how often a run waiting for its common start says
// so: it never waits in silence.
const startNoticeEvery = 10 * time.Second

// waitStart sleeps until at (the shards' common start), saying on notice
// when it starts and how long it still waits, at least every
// startNoticeEvery; it returns at once when at is zero or past. Ctrl-C
// during the wait is an interrupt before anything was measured, and says
// so.
func waitStart(ctx context.Context, at time.Time, c clock, notice func(string)) error {
	if at.IsZero() {
		return nil
	}
	when := at.UTC().Format(time.RFC3339Nano)
	for {
		d := at.Sub(c.Now())
		if d <= 0 {
			return nil
		}
		notice(fmt.Sprintf("waiting for the common start at %s (in %s)\n", when, d.Round(time.Second)))
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w while waiting for the common start at %s: the run had not started, nothing was measured", ErrInterrupted, when)
		case <-c.After(min(d, startNoticeEvery)):
		}
	}
}

// waitFor polls ready every second until it holds, for shards that must
// not load what shard 0 loads: the database under test is the barrier.
// Notices of the wait go to w.
func waitFor(ctx context.Context, w io.Writer, limit time.Duration, what string, ready func(context.Context) (bool, error)) error {
	return pollFor(ctx, w, limit, time.Second, what, ready)
}

// waitNoticeEvery is how often a shard that still waits says so.
const waitNoticeEvery = 30 * time.Second

// pollFor polls ready every period until it holds or limit passes. A shard
// never waits in silence: when the first poll fails it says on w (nil:
// nowhere) what it waits for and until when, then how long it has waited
// every waitNoticeEvery.
func pollFor(ctx context.Context, w io.Writer, limit, every time.Duration, what string, ready func(context.Context) (bool, error)) error {
	wctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	t0 := time.Now()
	var noticed time.Time
	for {
		ok, err := ready(wctx)
		if err == nil && ok {
			if !noticed.IsZero() && w != nil {
				fmt.Fprintf(w, "done waiting for %s after %s\n", what, time.Since(t0).Round(time.Second))
			}
			return nil
		}
		if w != nil && (noticed.IsZero() || time.Since(noticed) >= waitNoticeEvery) {
			if noticed.IsZero() {
				fmt.Fprintf(w, "waiting for %s (at most %s, until %s)\n", what, limit, t0.Add(limit).Format("15:04:05"))
			} else {
				fmt.Fprintf(w, "still waiting for %s: %s so far, giving up at %s\n", what, time.Since(t0).Round(time.Second), t0.Add(limit).Format("15:04:05"))
			}
			noticed = time.Now()
		}
		select {
		case <-wctx.Done():
			if ctx.Err() != nil {
				return ErrInterrupted
			}
			return fmt.Errorf("waited %s for %s", limit, what)
		case <-time.After(every):
		}
	}
}

// dirBarrier is a meeting point of a run's shards in a directory they all
// see: a shard arrives at a named step by writing a file, and waits until
// all N have (or until shard 0 has, for a step only shard 0 takes). It
// needs nothing but a shared file system (a ReadWriteMany volume on
// Kubernetes, NFS between machines).
type dirBarrier struct {
	dir    string
	sh     shard
	limit  time.Duration
	notice io.Writer // where a wait is announced (nil: nowhere)
}

// newDirBarrier prepares dir for the run's shards; run names the run (its
// options), so two runs sharing a directory do not meet each other.
func newDirBarrier(dir, run string, sh shard, limit time.Duration, notice io.Writer) (*dirBarrier, error) {
	d := filepath.Join(dir, run)
	if err := os.MkdirAll(d, 0o755); err != nil {
		return nil, Usagef("--barrier %s: %v", dir, err)
	}
	return &dirBarrier{dir: d, sh: sh, limit: limit, notice: notice}, nil
}

// arrive marks this shard at step.
func (b *dirBarrier) arrive(step string) error {
	p := filepath.Join(b.dir, step+"."+strconv.Itoa(b.sh.i))
	if err := os.WriteFile(p, []byte(time.Now().UTC().Format(time.RFC3339Nano)+"\n"), 0o644); err != nil {
		return fmt.Errorf("barrier: %w", err)
	}
	return nil
}

// wait waits until the shards in idx have arrived at step.
func (b *dirBarrier) wait(ctx context.Context, step string, idx ...int) error {
	return pollFor(ctx, b.notice, b.limit, 50*time.Millisecond, fmt.Sprintf("the shards at %q in %s", step, b.dir), func(context.Context) (bool, error) {
		for _, i := range idx {
			if _, err := os.Stat(filepath.Join(b.dir, step+"."+strconv.Itoa(i))); err != nil {
				return false, nil
			}
		}
		return true, nil
	})
}

// all is every shard's index.
func (b *dirBarrier) all() []int {
	out := make([]int, b.sh.n)
	for i := range out {
		out[i] = i
	}
	return out
}

// resetOnce makes the shards reset the database once between runs: every
// shard arrives at step, shard 0 waits for all, resets and arrives at
// step+"-reset"; the others wait for that.
func (b *dirBarrier) resetOnce(ctx context.Context, step string, reset func(context.Context) error) error {
	if err := b.arrive(step); err != nil {
		return err
	}
	if b.sh.i == 0 {
		if err := b.wait(ctx, step, b.all()...); err != nil {
			return err
		}
		if err := reset(ctx); err != nil {
			return err
		}
		return b.arrive(step + "-reset")
	}
	return b.wait(ctx, step+"-reset", 0)
}

// markStartLate records how late the measured run started after the
// common start (at zero: no common start, nothing recorded).
func markStartLate(s *Session, at time.Time) {
	if !at.IsZero() {
		s.SetExtra("start_late_ms", float64(s.Started().Sub(at).Microseconds())/1000)
	}
}

// shardWaitLimit bounds every wait of a shard for the others (a shard
// that died must not leave the rest waiting forever).
const shardWaitLimit = 30 * time.Minute

// sharedDB refuses a sharded run without --db: the default is a SQLite
// file of each shard's own, which the shards would not share; and on
// null://, which lives in one process's memory: shard 0's load could
// never reach the others, which would wait for it until their limit.
func sharedDB(sh shard, db string) error {
	switch {
	case sh.sharded() && db == "":
		return Usagef("a shard needs --db: the shards of a run share one database (without --db each would write its own SQLite file)")
	case sh.sharded() && strings.HasPrefix(db, result.HarnessOnlyAdapter+":"):
		return Usagef("--db %s cannot be shared by shards: null:// lives in one process's memory (shards need a database they all reach; for the harness alone run one process without --shard)", db)
	}
	return nil
}

// runKey names a run by what its shards share (workload, database,
// options, common start), for its barrier directory: shards of one run
// meet there, a rerun with another --start-at or other options does not
// meet the files of an earlier one.
func runKey(h result.Header, at time.Time) (string, error) {
	k, err := merge.RunKey(h)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte(k + "|" + at.UTC().Format(time.RFC3339Nano)))
	return hex.EncodeToString(sum[:6]), nil
}

// loadBatch is the unit a sharded load splits: batch k is items
// [k·loadBatch, (k+1)·loadBatch) of the dataset, so a shard's part is a
// function of (dataset, i, n) alone and n shards load it exactly once.
const loadBatch = 1000

// loadShare is the items [lo, hi) of a dataset of total items that shard
// sh loads: its share of the dataset's batches of size batch.
func (sh shard) loadShare(total, batch int64) (lo, hi int64) {
	nb := (total + batch - 1) / batch
	blo, bhi := sh.share64(nb)
	return min(blo*batch, total), min(bhi*batch, total)
}
