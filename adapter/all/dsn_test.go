package all_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/fieldbench/fieldbench/adapter"
	_ "github.com/fieldbench/fieldbench/db/all"
	"github.com/fieldbench/fieldbench/redact/redacttest"
)

// parsers are every registered adapter's DSN check (Adapter.CheckDSN), by
// scheme: taken from the registry that adapter/all fills, so an adapter
// added later is in every test below without a word here (a hand-kept
// list left out couchdb, mongodb and null, whose Open quoted the DSN raw).
var parsers = func() map[string]func(string) error {
	m := map[string]func(string) error{}
	for _, a := range adapter.Registered() {
		for _, s := range a.Schemes() {
			m[s] = a.CheckDSN
		}
	}
	return m
}()

// Finding 3 of issue 13: a password reached error messages through the
// parsers (cassandra quoted the host "u:pw@127.0.0.1:1"; net/url messages
// quote the failing port or escape). Every parse error is marked
// ErrBadDSN and shows no password.
func TestParseDSNErrorsHidePasswords(t *testing.T) {
	t.Parallel()
	const pw = "s3cr3tPW"
	tails := []string{
		"u:" + pw + "@127.0.0.1:1/ks", "u:" + pw + "@[::1/x", ":" + pw + "@[::1", "u:12#" + pw + "@h/db",
		"u:" + pw + "/x@h/db", "u:" + pw + "?x@h/db", "u:" + pw + "%zz@h/db", "u:" + pw + "@h:99999/db?x=%zz",
		"h:1/db?password=" + pw + "&nosuch=1", "u:" + pw + "@h:1/db?nosuch=1", "u:" + pw,
	}
	for scheme, parse := range parsers {
		for _, tail := range tails {
			dsn := scheme + "://" + tail
			err := parse(dsn)
			if err == nil {
				continue
			}
			if strings.Contains(err.Error(), pw) || strings.Contains(err.Error(), "s3cr") {
				t.Errorf("%s: error shows the password: %v", dsn, err)
			}
			if !errors.Is(err, adapter.ErrBadDSN) {
				t.Errorf("%s: error %v does not wrap adapter.ErrBadDSN", dsn, err)
			}
		}
	}
}

// FuzzParseDSN feeds every adapter's DSN parser: no input panics, every
// error is marked ErrBadDSN, and a password put in the userinfo or in a
// password= parameter never shows in an error.
func FuzzParseDSN(f *testing.F) {
	for _, s := range []string{
		"postgres://postgres@127.0.0.1:5432/fieldbench?sslmode=disable",
		"postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable&replicas=127.0.0.1:5433&read_from=replicas",
		"mariadb://fieldbench:pw@127.0.0.1:3306/fieldbench?nodes=127.0.0.1:3307",
		"redis://127.0.0.1:6379?cluster=1&addrs=127.0.0.1:6380,127.0.0.1:6381",
		"cassandra://127.0.0.1:9042,127.0.0.2:9042/fieldbench?consistency=QUORUM&rf=3",
		"hbase://127.0.0.1:8080/ns?timeout=5s&conns=4",
		"rethinkdb://admin:pw@127.0.0.1:28015/fieldbench?parts=1&timeout=5s",
		"sqlserver://sa:pw@127.0.0.1:1433?database=fieldbench&encrypt=disable&ingest=bulk",
		"couchbase://u:pw@127.0.0.1:11210,127.0.0.1:11211/default?prefix=fb&stale=ok&replicate_to=1",
		"sqlite:///tmp/fb.db", "sqlite://", "postgres://nohost:99999", "mysql://u:pw@[::1/x",
	} {
		f.Add(s, "s3cr3t")
	}
	f.Fuzz(func(t *testing.T, raw, pass string) {
		for scheme, parse := range parsers {
			if err := parse(raw); err != nil && !errors.Is(err, adapter.ErrBadDSN) {
				t.Errorf("%s parser on %q: %v is not ErrBadDSN", scheme, raw, err)
			}
			pass := strings.ReplaceAll(pass, "&", "")
			for _, form := range []func(string) string{
				func(p string) string { return scheme + "://u:" + p + "@127.0.0.1:1/db" },
				func(p string) string { return scheme + "://127.0.0.1:1/db?password=" + p },
			} {
				dsn := form(pass)
				err := parse(dsn)
				if err == nil || !redacttest.Leaks(err.Error(), dsn, pass) {
					continue
				}
				// The message's own words may hold a password made of
				// them (" a ", "#' "): it leaks only when it has a letter
				// or digit, and the error for the same password with
				// those shifted (same punctuation, same parser path) does
				// not show it too.
				other := parse(form(shift(pass)))
				if shift(pass) != pass && (other == nil || !strings.Contains(other.Error(), pass)) {
					t.Errorf("%s: error shows the password %q: %v", dsn, pass, err)
				}
			}
		}
	})
}

// shift replaces every ASCII letter and digit of s by the next one (z to
// a, Z to A, 9 to 0), keeping everything else.
func shift(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == 'z':
			return 'a'
		case r == 'Z':
			return 'A'
		case r == '9':
			return '0'
		case 'a' <= r && r < 'z', 'A' <= r && r < 'Z', '0' <= r && r < '9':
			return r + 1
		}
		return r
	}, s)
}

// Issue 40, finding 1: `--db null://user:S3cretPW9@host` printed the
// password (null's Open quoted the DSN raw). Every registered adapter's
// DSN check is given DSNs holding a known password in every place
// redact.DSN masks one (a URL's userinfo, with or without a user and
// with the characters that bend a URL; password-like query parameters),
// each malformed in several ways; whatever it refuses it refuses as
// ErrBadDSN, and its message never shows the password nor a piece of it.
// adapter.CheckDSN, which Open and a run's checks go through, is held to
// the same, schemes that are not one included.
func TestCheckDSNHidesPasswords(t *testing.T) {
	t.Parallel()
	const pw = "S3cretPW9"
	pieces := []string{pw, "S3cr", "cretP", "tPW9"}
	userinfos := []string{"", "user:" + pw + "@", ":" + pw + "@", "user:" + pw + "#x@", "user:" + pw + "/x@",
		"user:" + pw + "?x@", "user:" + pw + "%zz@", "user:" + pw + "@x@", "user:" + pw}
	hosts := []string{"127.0.0.1:1", "127.0.0.1:bad:port", "127.0.0.1:99999", "127.0.0.1:0", "[::1", "[::1]:99999", "", "h%zz:1", "h:1,h2:99999"}
	paths := []string{"", "/db", "/a/b/c", "/db#frag"}
	queries := []string{"", "?password=" + pw, "?nosuch=1", "?PassWord=" + pw + "&x=%zz", "?sslpassword=" + pw + "&nosuch=1",
		"?pass=" + pw, "?passwd=" + pw + "&timeout=bad", "?pwd=" + pw, "?auth=" + pw, "?token=" + pw, "?client_secret=" + pw, "?pass%77ord=" + pw}
	var checked, refused int
	for scheme, check := range parsers {
		for _, ui := range userinfos {
			for _, h := range hosts {
				for _, p := range paths {
					for _, q := range queries {
						dsn := scheme + "://" + ui + h + p + q
						if !strings.Contains(dsn, pw) || !strings.HasSuffix(ui, "@") && ui != "" && h != "" {
							continue // a userinfo without '@' is the whole authority
						}
						checked++
						for name, err := range map[string]error{"the adapter's CheckDSN": check(dsn), "adapter.CheckDSN": adapter.CheckDSN(dsn)} {
							if err == nil {
								continue
							}
							refused++
							msg := err.Error()
							for _, piece := range pieces {
								if strings.Contains(msg, piece) {
									t.Errorf("%s of %s shows the password: %s", name, dsn, msg)
									break
								}
							}
							if !errors.Is(err, adapter.ErrBadDSN) {
								t.Errorf("%s of %s: %v does not wrap adapter.ErrBadDSN", name, dsn, err)
							}
						}
					}
				}
			}
		}
	}
	// Without a scheme, or with a "scheme" that is none (what precedes
	// "://" was a userinfo).
	for _, dsn := range []string{pw, "user:" + pw + "@h://x", "user:" + pw + "@tcp(127.0.0.1:3306)/db", "host=h password=" + pw, "1x://u:" + pw + "@h", "://u:" + pw + "@h"} {
		err := adapter.CheckDSN(dsn)
		if err == nil || !errors.Is(err, adapter.ErrBadDSN) || strings.Contains(err.Error(), pw) || strings.Contains(err.Error(), "S3cr") {
			t.Errorf("adapter.CheckDSN(%q) = %v: want ErrBadDSN without the password", dsn, err)
		}
	}
	if len(parsers) < 12 || refused < checked {
		t.Fatalf("%d schemes, %d DSNs, %d refusals: the test ran on less than it should", len(parsers), checked, refused)
	}
}

// Issue 40, finding 6: redis://127.0.0.1:99999 was taken and failed at
// the dial (exit 1). A port out of range, or a null DSN with anything
// after null://, is a DSN of the wrong form for every adapter that takes a
// host (sqlite's DSN is a file path, which may hold a colon).
func TestCheckDSNRefusesBadPorts(t *testing.T) {
	t.Parallel()
	for scheme, check := range parsers {
		if scheme == "sqlite" {
			continue
		}
		for _, tail := range []string{"127.0.0.1:99999", "127.0.0.1:0", "127.0.0.1:65536/db", "u@127.0.0.1:123456/db", "[::1]:99999"} {
			dsn := scheme + "://" + tail
			if err := check(dsn); err == nil || !errors.Is(err, adapter.ErrBadDSN) {
				t.Errorf("%s: %v; want a refusal wrapping adapter.ErrBadDSN", dsn, err)
			}
		}
	}
	for _, dsn := range []string{"null://x", "null:///", "null://?", "null://u:pw@h"} {
		if err := adapter.CheckDSN(dsn); !errors.Is(err, adapter.ErrBadDSN) {
			t.Errorf("%s: %v; want ErrBadDSN", dsn, err)
		}
	}
	if err := adapter.CheckDSN("null://"); err != nil {
		t.Errorf("null://: %v", err)
	}
}
