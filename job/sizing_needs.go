package job

import "github.com/fieldbench/fieldbench/workload/trajectory"

// The memory estimates of every job's commands, side by side (the sizing
// rule: sizing.go). Each term is what a command holds at once; options
// that only make a command longer (--records of a run, --duration,
// --sets, --repeat of wiki, --articles of a load, op trajectory write's
// --count) are not here: those commands print progress and stop on
// Ctrl-C instead.

// pos is x, or 0 for a value the command refuses anyway (a negative
// count must not make a product of two of them positive).
func pos[T int | int64 | float64](x T) float64 { return float64(max(x, 0)) }

// Needs: every source holds one batch (of at most --records records) at a
// time; op batch holds its --count records.
func (j *ingestJob) Needs(verb string) []Need {
	o := j.opts
	held := func(records int64) []Need {
		return []Need{
			need(o, costIngestRecord, pos(j.sources)*pos(min(int64(j.batch), records)), "sources", "batch"),
			need(o, costClient, pos(j.sources), "sources"),
		}
	}
	switch verb {
	case "run":
		return held(j.records)
	case "sweep":
		return held(j.to)
	case "op batch":
		return []Need{need(o, costIngestRecord, pos(j.count), "count")}
	}
	return nil
}

// Needs: load and run hold the whole dataset (a sharded load or generate
// its part), a run its clients too.
func (j *microblogJob) Needs(verb string) []Need {
	o := j.opts
	users := pos(j.users)
	if verb == "generate" || verb == "load" {
		if sh, err := shardOf(j.sharding.shard, j.sharding.shards); err == nil && sh.sharded() {
			if sh, err = sh.withSplit(j.sharding.split); err == nil {
				lo, hi := sh.share(j.users)
				users = pos(hi - lo)
			}
		}
	}
	switch verb {
	case "generate":
		return []Need{need(o, costMicroblogGenUser, users, "users")}
	case "load":
		return []Need{need(o, costMicroblogUser, users, "users")}
	case "run":
		return []Need{need(o, costMicroblogUser, users, "users"), need(o, costClient, pos(j.clients), "clients")}
	}
	return nil
}

// Needs: generate keeps every article's size; a run's threads are
// clients. Loads stream (synthetic articles and dumps alike: a dump's
// memory is bounded by wiki.DumpOptions, not by its size).
func (j *wikiJob) Needs(verb string) []Need {
	o := j.opts
	var dump []Need
	if j.from != "" {
		dump = []Need{{Options: "--from " + j.from, Units: 1, Cost: costWikiDump}}
	}
	switch verb {
	case "generate":
		return []Need{need(o, costWikiSize, pos(j.articles), "articles")}
	case "load":
		return dump
	case "run":
		return append(dump, need(o, costClient, pos(j.threads), "threads"))
	}
	return nil
}

// trajUsers is the users of --scale (0 for a scale the command refuses).
func (j *trajectoryJob) trajUsers() float64 {
	n, err := trajectory.RecordsForScale(j.scale)
	if err != nil {
		return 0
	}
	return float64(trajectory.UsersForRecords(n))
}

// Needs: the generator's users and one record cursor per writer (each
// with a plan per user), the records of the write requests in flight, and
// for a run its queries with their answers and one read phase's requests.
func (j *trajectoryJob) Needs(verb string) []Need {
	o := j.opts
	users := j.trajUsers()
	switch verb {
	case "generate":
		return []Need{need(o, costTrajUser, users, "scale")}
	case "load":
		return []Need{need(o, costTrajUser, 2*users, "scale"), need(o, costTrajRecord, pos(j.batch), "batch")}
	case "op write":
		return []Need{need(o, costTrajUser, 2*users, "scale"), need(o, costTrajRecord, min(pos(j.count), float64(trajOpWriteBatch)), "count")}
	case "run":
		writers := 1.0 // the sequential mode's one client
		if modes, err := trajectory.ParseModes(j.mode); err == nil {
			for _, m := range modes {
				if m == trajectory.Random {
					writers = max(writers, pos(j.clients))
				}
			}
		}
		cursors := 1 + writers // the generator's users, and each writer's cursor
		if j.verify {
			cursors++ // the reference answers' cursor
		}
		return []Need{
			need(o, costTrajUser, cursors*users, "scale", "clients"),
			need(o, costTrajRecord, writers*pos(j.batch), "clients", "batch"),
			need(o, costTrajQuery, float64(len(trajectory.QueryOps))*pos(j.queries), "queries"),
			need(o, costTrajRequest, pos(j.queries)*pos(j.repeat), "queries", "repeat"),
			need(o, costClient, pos(j.clients), "clients"),
		}
	}
	return nil
}
