package cluster

import "testing"

func TestSpawnProgram(t *testing.T) {
	for _, tc := range []struct {
		p    Proc
		want string
	}{
		{Proc{Path: "redis-server", Args: []string{"a.conf"}}, "redis-server"},
		{Proc{Path: "ip", Args: []string{"netns", "exec", "fbn-1-redis1", "redis-server", "a.conf"}}, "redis-server"},
		{Proc{Path: "/usr/sbin/ip", Args: []string{"netns", "exec", "fbcb-1", "java", "-jar", "x"}}, "java"},
		{Proc{Path: "ip", Args: []string{"netns", "exec"}}, "ip"},
		{Proc{Path: "ip", Args: []string{"netns", "exec", "fbn-1-pg1", "setpriv", "--reuid=postgres", "--", "/usr/lib/postgresql/15/bin/postgres", "-D", "d"}}, "/usr/lib/postgresql/15/bin/postgres"},
		{Proc{Path: "ip", Args: []string{"netns", "exec", "fbn-1-pg1", "setpriv", "--reuid=postgres"}}, "setpriv"},
	} {
		if got := spawnProgram(tc.p); got != tc.want {
			t.Errorf("%v: %q, want %q", tc.p, got, tc.want)
		}
	}
}

// TestWordList: the lists of engines the help texts print read as
// sentences.
func TestWordList(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		words []string
		conj  string
		want  string
	}{
		{nil, "and", ""},
		{[]string{"redis"}, "and", "redis"},
		{[]string{"redis", "postgres"}, "or", "redis or postgres"},
		{[]string{"cassandra", "couchdb", "redis"}, "and", "cassandra, couchdb and redis"},
	} {
		if got := WordList(c.words, c.conj); got != c.want {
			t.Errorf("WordList(%q, %q) = %q, want %q", c.words, c.conj, got, c.want)
		}
	}
}
