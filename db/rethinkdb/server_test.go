package rethinkdb

import "testing"

func TestIdentify(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in            string
		name, version string
		wantErr       bool
	}{
		{"rethinkdb 2.4.4~0bookworm (GCC 12.2.0)", "RethinkDB", "2.4.4~0bookworm", false},
		{"reqlite 2.3.0 (a JavaScript reimplementation of RethinkDB 2.2)", "reqlite", "2.3.0", false},
		{"rethinkdb", "", "", true},
		{"mongodb 7.0", "", "", true},
		{"", "", "", true},
	}
	for _, tt := range tests {
		got, err := identify(tt.in)
		if (err != nil) != tt.wantErr || got.Name != tt.name || got.Version != tt.version {
			t.Errorf("identify(%q) = %+v, %v; want %s %s (error %v)", tt.in, got, err, tt.name, tt.version, tt.wantErr)
		}
	}
}
