package cluster

import "fmt"

// optionCheckers read an engine's options (--opt key=value) the way its Up
// does, without starting anything: `cluster up` asks CheckOptions before
// it writes the cluster's directory, so an unknown or malformed option is
// bad input refused at once rather than a failure after cluster.json
// exists. An engine not listed takes any option (postgres: server settings).
var optionCheckers = map[string]func(Options) error{
	"cassandra": func(o Options) error { _, err := parseCassOpts(o); return err },
	"couchbase": func(o Options) error { _, err := parseCouchbaseOpts(o); return err },
	"couchdb": func(o Options) error {
		for k := range o.Extra {
			return fmt.Errorf("couchdb: unknown option %q (the engine has none)", k)
		}
		return nil
	},
	"hbase":     func(o Options) error { _, err := parseHBaseOpts(o); return err },
	"mariadb":   func(o Options) error { _, err := parseMariaOpts(o); return err },
	"mongodb":   func(o Options) error { _, err := parseMongoOpts(o); return err },
	"redis":     func(o Options) error { _, err := parseRedisOpts(o); return err },
	"rethinkdb": parseRethinkOpts,
	"sqlserver": func(o Options) error { _, err := parseSQLServerOpts(o); return err },
}

// CheckOptions reports what engine's Up would refuse in opts.
func CheckOptions(engine string, opts Options) error {
	if check, ok := optionCheckers[engine]; ok {
		return check(opts)
	}
	return nil
}
