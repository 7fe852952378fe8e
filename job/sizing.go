package job

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/fieldbench/fieldbench/probe"
	"github.com/fieldbench/fieldbench/runner"
)

// The sizing rule (issue 40). Every option that sizes what a command holds
// in memory (records of one batch, users of a dataset, clients, queries,
// articles whose sizes are kept) or the pace of its schedule (--rate) is
// checked here, in Fit, before the command starts: a rate the runner's
// schedule cannot honour, and a memory estimate, from bytes per unit
// measured on this project's machine (the costs below), that exceeds the
// memory this machine offers (probe.Memory.Usable), are refused as bad
// input (exit 2) with the estimate. What fits but takes long prints its
// progress at least every 10 s and stops within a second of Ctrl-C (the
// commands' long paths do: progressSource, heartbeat); an input that is
// streamed (a wiki dump) is read in memory bounded whatever its size.
//
// Fit is called by Find's commands, so the CLI, experiments and findmax
// all pass through it; the CLI calls it once more before it starts a
// --cluster or a metrics endpoint.

// Cost is the memory one unit of a sizing option costs.
type Cost struct {
	Bytes float64 // per unit
	Unit  string  // what one unit is, for the message
}

// The measured costs: peak RSS of the fieldbench binary at two sizes, the
// difference over the difference in units (scripts/measure-sizing.sh, run
// twice on 2026-12-02 on this project's machine: 2 cores, 24 GiB, GOGC
// default), the larger rounded up; or, for what only the Go heap holds,
// the live heap per unit, doubled for the heap's growth between
// collections (TestMeasureSizing in sizing_measure_test.go, the same
// day). docs/limits.md lists them.
var (
	// costIngestRecord: one ingest record generated into a batch and
	// handed to the database's driver (SQLite: its statement's bound
	// arguments). op ingest batch --count 200,000 to 1,000,000 on
	// SQLite: 469 and 471 B, 660 B from 100,000 to 400,000 (the peak
	// follows the collector's timing); null:// (the records alone)
	// costs less than half.
	costIngestRecord = Cost{660, "ingest record held in a batch"}
	// costClient: one client, thread or source (runner.ClientBudget, the
	// harness's budget; scripts/scale-clients.sh measured 3-12 KiB).
	costClient = Cost{runner.ClientBudget, "client"}
	// costMicroblogUser: one user of the microblog dataset in memory (its
	// follows, tweets and indexes: about 35 follows and 10 tweets a user
	// at the generator's power laws) while it loads and while a run uses
	// it. load microblog --db null:// --users 10,000 to 160,000: 3,494
	// and 3,497 B. SQLite adds its page cache, bounded (64 MiB).
	costMicroblogUser = Cost{3500, "microblog user"}
	// costMicroblogGenUser: one user while generate writes the CSV files
	// (generate keeps the follows of its part and a soft memory limit).
	// generate microblog --users 10,000 to 160,000: 688 and 691 B.
	costMicroblogGenUser = Cost{700, "microblog user being written"}
	// costWikiSize: one synthetic article's size, kept by generate for
	// the percentiles it prints. generate wiki --articles 100,000 to
	// 1,000,000 (to /dev/null): 17 and 19 B.
	costWikiSize = Cost{20, "article size kept for the statistics"}
	// costWikiDump: a MediaWiki dump being read, whatever its size: at
	// most one token and one page of text (wiki.DumpOptions' bounds,
	// with the decoder's copies) and a batch of such pages for the
	// database. load wiki --db sqlite --from a dump of 16 MiB pages
	// (the page bound): peak RSS 307 and 335 MB in two measurements;
	// --from /dev/zero (refused): 185 and 191 MB.
	costWikiDump = Cost{340e6, "dump being read (bounded, whatever its size)"}
	// costTrajUser: one trajectory user (records / 2016) in the generator
	// and in each record cursor (one per write client, one for the
	// reference answers). TestMeasureSizing: 312 B live in a cursor
	// (44 in the generator), 625 with the heap's growth.
	costTrajUser = Cost{640, "trajectory user per cursor"}
	// costTrajRecord: one trajectory record of a write request, held by
	// its client and encoded by the driver. load trajectory --db sqlite
	// --batch 10,000 to 100,000: 102 and 53 B.
	costTrajRecord = Cost{110, "trajectory record held in a write request"}
	// costTrajQuery: one distinct query of one type with its reference
	// answer (--verify). TestMeasureSizing: 357 B live, 714 with the
	// heap's growth.
	costTrajQuery = Cost{720, "trajectory query with its answer"}
	// costTrajRequest: one request of a read phase in its client's issue
	// order (queries x repeat of one type). TestMeasureSizing: 8 B live
	// (an int), 16 with the heap's growth.
	costTrajRequest = Cost{16, "read request in a client's order"}
)

// baseBytes is the process before any option's memory: peak RSS of
// 'fieldbench list' is 42 MB; a run's recorder, result file and report add
// some more.
const baseBytes = 64 << 20

// Need is one term of a command's memory estimate: Units of Cost, sized by
// the options named (as the command line writes them).
type Need struct {
	Options string // "--count 100000000", "--sources 8 × --batch 1000"
	Units   float64
	Cost    Cost
}

func (n Need) bytes() float64 { return max(n.Units, 0) * n.Cost.Bytes }

// need is a Need of units of cost from the options named (their values
// are read from o as set).
func need(o *Opts, cost Cost, units float64, names ...string) Need {
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = "--" + n + " " + o.Get(n)
	}
	return Need{Options: strings.Join(parts, " × "), Units: units, Cost: cost}
}

// Sized is a job whose commands' memory depends on their options.
type Sized interface {
	// Needs is the memory estimate of command verb ("run", "op batch")
	// with the options as set; an option with a value the command
	// refuses anyway (negative, zero) adds nothing.
	Needs(verb string) []Need
}

// machineMemory is the memory Fit compares with (0: unknown, nothing is
// refused); a variable so that a test can give a small machine.
var machineMemory = func() uint64 { return probe.ReadMemory().Usable() }

// SizeError is the sizing rule's refusal of a command that cannot fit in
// the machine's memory. Fit returns it as a usage error (exit 2).
type SizeError struct {
	Needs  []Need  // the estimate's terms, the largest first
	Total  float64 // bytes, baseBytes included
	Usable uint64  // what the machine offers
}

func (e *SizeError) Error() string {
	var terms []string
	for _, n := range e.Needs {
		if b := n.bytes(); b >= e.Total/100 || len(terms) == 0 {
			terms = append(terms, fmt.Sprintf("%s: %s (%s × %s per %s)", n.Options, gb(b), count(n.Units), size(n.Cost.Bytes), n.Cost.Unit))
		}
	}
	return fmt.Sprintf("%s needs about %s of memory; this machine has %s available: use smaller values (or run shards on several machines)",
		strings.Join(terms, " + "), gb(e.Total), gb(float64(e.Usable)))
}

// Fit applies the sizing rule to command verb of j with its options as
// set: nil when the command can start, else a usage error saying why (a
// rate the schedule cannot honour, or the memory estimate and what the
// machine has).
func Fit(j Job, verb string) error {
	if err := j.Opts().checkRates(verb); err != nil {
		return Usage(err)
	}
	s, ok := j.(Sized)
	if !ok {
		return nil
	}
	needs := s.Needs(verb)
	total := float64(baseBytes)
	for _, n := range needs {
		total += n.bytes()
	}
	usable := machineMemory()
	if usable == 0 || total <= float64(usable) {
		return nil
	}
	sorted := append([]Need(nil), needs...)
	sort.SliceStable(sorted, func(a, b int) bool { return sorted[a].bytes() > sorted[b].bytes() })
	return Usage(&SizeError{Needs: sorted, Total: total, Usable: usable})
}

// fitted is command c of j with Fit before its Run (its operations' too).
func fitted(j Job, c Command) Command {
	if run := c.Run; run != nil {
		verb := c.Verb
		c.Run = func(ctx context.Context, env *Env) error {
			if err := Fit(j, verb); err != nil {
				return err
			}
			load, err := loadBudgetOf(j, verb)
			if err != nil {
				return err
			}
			env.load = load
			return run(ctx, env)
		}
	}
	if len(c.Subs) > 0 {
		subs := make([]Command, len(c.Subs))
		for i, sub := range c.Subs {
			subs[i] = fitted(j, sub)
		}
		c.Subs = subs
	}
	return c
}

// gb writes bytes as the message does: "57.6 GB", "310 MB".
func gb(b float64) string {
	if b >= 1e9 {
		return fmt.Sprintf("%.1f GB", b/1e9)
	}
	return fmt.Sprintf("%.0f MB", b/1e6)
}

// size writes a unit's cost: "660 B", "32 KiB".
func size(b float64) string {
	if b >= 1<<10 && int64(b)%(1<<10) == 0 {
		return fmt.Sprintf("%d KiB", int64(b)>>10)
	}
	return fmt.Sprintf("%.0f B", b)
}

// count writes a number of units with thousands separators.
func count(u float64) string {
	s := fmt.Sprintf("%.0f", u)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}
