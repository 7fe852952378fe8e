package job

import "fmt"

// commandChecker is a job that checks a command's options as set without
// running the command or reaching a database: what it refuses, the
// command would refuse before it starts.
type commandChecker interface {
	check(verb string) error
}

// CheckShards checks the options of j's command verb, as set, as each of
// n shards (--shard I/N, I from 0) would check them before it starts: kube
// job asks it before it prints a Job, so that it never prints one whose
// pods must all refuse their options. db stands for the shards' --db,
// which the caller does not know (a Job's pods read it from a Secret): it
// is set as the option, and the checks look only at whether there is one
// and of which kind. The job's shard and db options are left set.
func CheckShards(j Job, verb string, n int, db string) error {
	o := j.Opts()
	if err := o.Set("db", db); err != nil {
		return Usage(err)
	}
	for i := range n {
		if err := o.Set("shard", fmt.Sprintf("%d/%d", i, n)); err != nil {
			return Usage(err)
		}
		if err := checkCommand(j, verb); err != nil {
			return err
		}
	}
	return nil
}

// checkCommand checks j's own options of verb: a loader's run and load
// (its CheckRun and its loading's check), a commandChecker's commands, or,
// for a job that is neither, its RunChecker or SweepChecker. Check (with
// the DSN) and CheckShards (as each shard) both end here.
func checkCommand(j Job, verb string) error {
	if l, ok := j.(loader); ok {
		switch verb {
		case "run":
			return l.CheckRun()
		case "load":
			return l.loading().check()
		}
		return nil
	}
	if c, ok := j.(commandChecker); ok {
		return c.check(verb)
	}
	switch verb {
	case "run":
		return CheckRun(j)
	case "sweep":
		if c, ok := j.(SweepChecker); ok {
			return c.CheckSweep()
		}
	}
	return nil
}
