package cluster_test

import (
	"strings"
	"testing"

	"github.com/fieldbench/fieldbench/cluster"
	_ "github.com/fieldbench/fieldbench/db/all" // the engines of the database folders, which package cluster's own tests cannot link
)

// Every engine's options are checked without starting anything, so
// `cluster up ENGINE --opt bogus=1` is refused before its directory and
// cluster.json are written (issue 31, finding 5).
func TestCheckOptions(t *testing.T) {
	t.Parallel()
	for _, engine := range cluster.Engines() {
		e, err := cluster.Get(engine)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := e.(cluster.OptionChecker); !ok {
			continue
		}
		err = cluster.CheckOptions(engine, cluster.Options{Nodes: 1, Extra: map[string]string{"bogus": "1"}})
		if err == nil || !strings.Contains(err.Error(), "bogus") {
			t.Errorf("%s --opt bogus=1: %v", engine, err)
		}
	}
	for _, tc := range []struct {
		engine string
		extra  map[string]string
	}{
		{"redis", map[string]string{"replicas": "1"}},
		{"mariadb", map[string]string{"galera": "false"}},
		{"couchbase", map[string]string{"buckets": "2"}},
		{"postgres", map[string]string{"shared_buffers": "128MB"}},
		{"couchdb", nil},
	} {
		if err := cluster.CheckOptions(tc.engine, cluster.Options{Nodes: 1, Extra: tc.extra}); err != nil {
			t.Errorf("%s %v refused: %v", tc.engine, tc.extra, err)
		}
	}
}
