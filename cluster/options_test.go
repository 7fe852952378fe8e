package cluster

import (
	"strings"
	"testing"
)

// Every engine's options are checked without starting anything, so
// `cluster up ENGINE --opt bogus=1` is refused before its directory and
// cluster.json are written (issue 31, finding 5).
func TestCheckOptions(t *testing.T) {
	t.Parallel()
	for _, e := range registered() {
		if _, ok := e.(OptionChecker); !ok {
			continue
		}
		engine := e.Name()
		err := CheckOptions(engine, Options{Nodes: 1, Extra: map[string]string{"bogus": "1"}})
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
		{"postgres", map[string]string{"shared_buffers": "128MB"}},
		{"couchdb", nil},
	} {
		if err := CheckOptions(tc.engine, Options{Nodes: 1, Extra: tc.extra}); err != nil {
			t.Errorf("%s %v refused: %v", tc.engine, tc.extra, err)
		}
	}
}
