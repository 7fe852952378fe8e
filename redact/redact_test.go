package redact_test

import (
	"strings"
	"testing"

	"github.com/fieldbench/fieldbench/redact"
	"github.com/fieldbench/fieldbench/redact/redacttest"
)

// The leaks of issue 13 finding 3, and the forms every adapter takes.
func TestRedactHidesPasswords(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{"postgres://bob:s3cret@127.0.0.1:5432/db", "postgres://bob:xxxxx@127.0.0.1:5432/db"},
		{"postgres://bob@127.0.0.1:5432/db?sslmode=disable", "postgres://bob@127.0.0.1:5432/db?sslmode=disable"},
		{"sqlite:///tmp/x.db", "sqlite:///tmp/x.db"},
		{"redis://127.0.0.1:6379?cluster=1&addrs=127.0.0.1:6380", "redis://127.0.0.1:6379?cluster=1&addrs=127.0.0.1:6380"},
		{"host=127.0.0.1 password=s3cret user=bob", "host=127.0.0.1 password=xxxxx user=bob"},
		{"host=127.0.0.1 password = 's3 cr\\'et' user=bob", "host=127.0.0.1 password = xxxxx user=bob"},
		{"postgres://127.0.0.1/db?sslmode=disable&password=s3cret", "postgres://127.0.0.1/db?sslmode=disable&password=xxxxx"},
		{"postgres://127.0.0.1/db?PassWord=s3cret&x=1", "postgres://127.0.0.1/db?PassWord=xxxxx&x=1"},
		{"postgres://127.0.0.1/db?sslpassword=s3cret", "postgres://127.0.0.1/db?sslpassword=xxxxx"},
		{"postgres://127.0.0.1/db?pass%77ord=s3cret", "postgres://127.0.0.1/db?pass%77ord=xxxxx"},
		{"redis://127.0.0.1:6379?pass=s3cret", "redis://127.0.0.1:6379?pass=xxxxx"},
		// Unparsable after the scheme: never the raw string.
		{"mysql://u:s3cret@[::1/x", "mysql://u:xxxxx@[::1/x"},
		{"redis://:s3cret@[::1", "redis://:xxxxx@[::1"},
		{"postgres://u:s3c#ret@h/db", "postgres://u:xxxxx@h/db"},
		{"postgres://u:12#3s3cret@h/db", "postgres://u:xxxxx@h/db"},
		{"postgres://u:s3/cret@h/db", "postgres://u:xxxxx@h/db"},
		{"postgres://u:12/s3cret@h/db", "postgres://u:xxxxx@h/db"},
		{"postgres://u:s3?cret@h/db", "postgres://u:xxxxx@h/db"},
		{"postgres://u:s3cret%zz@h/db", "postgres://u:xxxxx@h/db"},
		{"postgres://u:s3@cret@h/db", "postgres://u:xxxxx@h/db"},
		{"postgres://u:s3cret/h", "postgres://xxxxx"},
		{"cassandra://u:s3cret@127.0.0.1:1/ks", "cassandra://u:xxxxx@127.0.0.1:1/ks"},
		{"bob:s3cret@tcp(127.0.0.1:3306)/db", "bob:xxxxx@tcp(127.0.0.1:3306)/db"},
	} {
		got := redact.DSN(tc.in)
		if got != tc.want || strings.Contains(got, "s3") {
			t.Errorf("DSN(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestRedactText(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{`open "postgres://u:s3cret@h/db": refused`, `open "postgres://u:xxxxx@h/db": refused`},
		{"cannot parse `host=h password=s3cret`: bad", "cannot parse `host=h password=xxxxx bad"},
		{"plain message, 3 = three", "plain message, 3 = three"},
		{"dial tcp 127.0.0.1:5432: connect: connection refused", "dial tcp 127.0.0.1:5432: connect: connection refused"},
	} {
		if got := redact.Text(tc.in); got != tc.want {
			t.Errorf("Text(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// dsnForms put a password in every place a DSN of fieldbench's adapters
// (or of their drivers) holds one, raw as a user would type it.
var dsnForms = []func(pass string) (dsn, seen string){
	func(p string) (string, string) {
		return "postgres://bob:" + p + "@127.0.0.1:5432/db?sslmode=disable", p
	},
	func(p string) (string, string) {
		return "mariadb://bob:" + p + "@[::1]:3306/db?nodes=127.0.0.1:3307", p
	},
	func(p string) (string, string) { return "mysql://u:" + p + "@[::1/x", p },
	func(p string) (string, string) { return "redis://:" + p + "@[::1", p },
	func(p string) (string, string) { return "cassandra://u:" + p + "@127.0.0.1:9042/ks", p },
	// Without a scheme; a password starting with "//" would turn the DSN
	// into a URL whose userinfo is ":" and whose scheme is the user name.
	func(p string) (string, string) {
		if strings.HasPrefix(p, "//") {
			return "", ""
		}
		return "bob:" + p + "@tcp(127.0.0.1:3306)/db", p
	},
	// In a query the driver sees the value up to the next '&'.
	func(p string) (string, string) {
		return "postgres://127.0.0.1:5432/db?sslmode=disable&password=" + p, before(p, "&")
	},
	func(p string) (string, string) {
		return "postgres://127.0.0.1/db?SSLPassword=" + p + "&x=1", before(p, "&")
	},
	func(p string) (string, string) { return "redis://127.0.0.1:6379?PASS=" + p, before(p, "&") },
	// In key=value form, up to white space, or quoted.
	func(p string) (string, string) { return "host=127.0.0.1 password=" + p + " user=bob", beforeSpace(p) },
	func(p string) (string, string) {
		q := strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(p)
		return "host=127.0.0.1 password='" + q + "' user=bob", p
	},
}

func before(s, sep string) string { v, _, _ := strings.Cut(s, sep); return v }

func beforeSpace(s string) string {
	if i := strings.IndexAny(s, " \t\r\n\v\f"); i >= 0 {
		return s[:i]
	}
	return s
}

// FuzzRedact asserts that a password, whatever its characters, never
// survives DSN in any DSN form (and that Text of a message holding
// the DSN hides it too, when the password has no white space). Passwords too short to tell from the rest of the DSN
// (or that occur in it anyway) are skipped.
func FuzzRedact(f *testing.F) {
	for _, s := range []string{"s3cret", "p#ss", "a/b/c", "q?x=1", "%zz%", "pa@ss", "[::1", "x y z", "'quoted'", `back\slash`,
		"a&b=c", "pw:with:colons", "://", "@@@@", "password=inner", "  lead", "\"dq\"", "ünïcode",
		"@00", "A://", "\x8d#s ", "//x", "&pAsswd=", "?pAss="} { // the last six: once found by the fuzzer
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, pass string) {
		for i, form := range dsnForms {
			dsn, seen := form(pass)
			if got := redact.DSN(dsn); redacttest.Leaks(got, dsn, seen) {
				t.Errorf("form %d: DSN(%q) = %q keeps the password %q", i, dsn, got, seen)
			}
			// Free text is cut into words at white space, so there a
			// password holding white space is out of reach.
			text := "open " + dsn + ": failed"
			if got := redact.Text(text); redacttest.Leaks(got, text, seen) && beforeSpace(pass) == pass {
				t.Errorf("form %d: Text(%q) = %q keeps the password %q", i, text, got, seen)
			}
		}
	})
}
