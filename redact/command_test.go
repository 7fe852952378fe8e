package redact

import (
	"strings"
	"testing"
)

// An external cluster's command templates are printed by experiment
// --dry-run: a password in them is masked as the scenario's dsn is
// (issue 31, finding 4).
func TestRedactCommand(t *testing.T) {
	t.Parallel()
	dsn := "postgres://bench:S3CRETpw@10.0.0.1/fb"
	for _, tc := range []struct{ cmd, keep string }{
		{"ssh {host} PGPASSWORD=S3CRETpw pg_ctl restart", "ssh {host} PGPASSWORD="},
		{"redis-cli -h {host} -a S3CRETpw shutdown nosave", "redis-cli -h {host} -a "},
		{"mysqladmin --password S3CRETpw -h {host} shutdown", "mysqladmin --password "},
		{"mysqladmin --password=S3CRETpw -h {host} shutdown", "mysqladmin --password="},
		{"mysqladmin -pS3CRETpw -h {host} shutdown", "mysqladmin -p"},
		{"psql postgres://bench:S3CRETpw@{host}/fb -c 'select 1'", "psql postgres://bench:"},
		{"curl -H 'Authorization: Bearer S3CRETpw' http://{host}/restart", "curl -H"},
	} {
		got := Command(tc.cmd, PasswordOf(dsn))
		if strings.Contains(got, "S3CRET") || !strings.Contains(got, Mask) || !strings.HasPrefix(got, tc.keep) {
			t.Errorf("Command(%q) = %q", tc.cmd, got)
		}
	}
	if got := Command("ssh {host} sudo systemctl kill -s KILL cassandra"); got != "ssh {host} sudo systemctl kill -s KILL cassandra" {
		t.Errorf("a command without a secret changed: %q", got)
	}
}

func TestPasswordOf(t *testing.T) {
	t.Parallel()
	for dsn, want := range map[string]string{
		"postgres://u:pw1@h/db":              "pw1",
		"redis://h:6379?password=pw2":        "pw2",
		"u:pw3@tcp(h:3306)/db":               "pw3",
		"cassandra://h:9042/ks":              "",
		"sqlite:///tmp/x.db":                 "",
		"mongodb://u:p%40w4@h/db?authSource": "p@w4",
	} {
		if got := PasswordOf(dsn); got != want {
			t.Errorf("PasswordOf(%q) = %q, want %q", dsn, got, want)
		}
	}
}
