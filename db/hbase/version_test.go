package hbase

import "testing"

func TestParseVersion(t *testing.T) {
	for _, tc := range []struct{ body, want string }{
		{`{"Version":"2.6.1-hadoop3"}`, "2.6.1-hadoop3"},
		{`"2.6.1"`, "2.6.1"},
		{"2.6.1\n", "2.6.1"},
	} {
		if got := parseVersion([]byte(tc.body)); got != tc.want {
			t.Errorf("parseVersion(%q) = %q, want %q", tc.body, got, tc.want)
		}
	}
}
