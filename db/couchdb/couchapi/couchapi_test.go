package couchapi

import (
	"encoding/json"
	"testing"
)

// TestParseWelcome: the server is named from GET /'s own words, so
// pouchdb-server is never reported as CouchDB.
func TestParseWelcome(t *testing.T) {
	for _, tc := range []struct {
		body, server, version string
	}{
		{`{"express-pouchdb":"Welcome!","version":"4.2.0","pouchdb-adapters":["leveldb"],"vendor":{"name":"PouchDB authors","version":"4.2.0"}}`, "pouchdb-server", "4.2.0"},
		{`{"couchdb":"Welcome","version":"3.3.3","git_sha":"40afbcfc7","vendor":{"name":"The Apache Software Foundation"}}`, "CouchDB", "3.3.3"},
		{`{"version":"1.0","vendor":{"name":"Acme"}}`, "Acme", "1.0"},
		{`{}`, "unknown CouchDB-compatible server", ""},
	} {
		var m map[string]any
		if err := json.Unmarshal([]byte(tc.body), &m); err != nil {
			t.Fatal(err)
		}
		w := ParseWelcome(m)
		if w.Server != tc.server || w.Version != tc.version {
			t.Errorf("%s: got %q %q, want %q %q", tc.body, w.Server, w.Version, tc.server, tc.version)
		}
	}
}

func TestPathAndDBURL(t *testing.T) {
	if got := Path("db", "a/b c"); got != "/db/a%2Fb%20c" {
		t.Errorf("Path = %q", got)
	}
	c := &Client{Base: "http://127.0.0.1:5984", User: "u", Password: "p w"}
	if got := c.dbURL("fb_x"); got != "http://u:p%20w@127.0.0.1:5984/fb_x" {
		t.Errorf("dbURL = %q", got)
	}
	if got := (&Client{Base: "http://h:1"}).dbURL("d"); got != "http://h:1/d" {
		t.Errorf("dbURL without credentials = %q", got)
	}
}
