// Package all links every workload and the adapters that are not yet a
// database folder of their own: importing it runs their registrations.
// What links everything is db/all, which imports this package and every
// db/<name> (adapter and cluster engine together): the binary and the
// tests that need every database import db/all.
package all

import (
	_ "github.com/fieldbench/fieldbench/adapter/null"
	_ "github.com/fieldbench/fieldbench/workload/ingest"
	_ "github.com/fieldbench/fieldbench/workload/microblog"
	_ "github.com/fieldbench/fieldbench/workload/trajectory"
	_ "github.com/fieldbench/fieldbench/workload/wiki"
)
