package adapter

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strconv"

	"github.com/fieldbench/fieldbench/redact"
)

// ErrBadDSN is wrapped by every error about a DSN's form (as opposed to a
// server that cannot be reached), so the CLI can tell bad input (exit 2)
// from a failure.
var ErrBadDSN = errors.New("bad DSN")

// BadDSN marks err as an error about a DSN's form (errors.Is(err,
// ErrBadDSN)) and redacts its message with redact.Text, so that a piece of
// a password an inner parser quoted does not get out.
func BadDSN(err error) error {
	if err == nil {
		return nil
	}
	return &dsnError{err: err}
}

type dsnError struct{ err error }

func (e *dsnError) Error() string   { return redact.Text(e.err.Error()) }
func (e *dsnError) Unwrap() []error { return []error{e.err, ErrBadDSN} }

// quotedRE matches a Go-quoted string in an error message.
var quotedRE = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)

// ParseURL parses a URL DSN. net/url's errors quote the DSN and the part
// that failed (a port, a host name, an escape), which may be a piece of
// the password; ParseURL's error names the DSN redacted and the reason
// without the quoted part, and wraps ErrBadDSN.
//
// A port outside 1-65535 is refused too: net/url takes any digits, and
// redis://127.0.0.1:99999 failed only at the dial, as a failure (exit 1)
// where the DSN was of the wrong form.
func ParseURL(dsn string) (*url.URL, error) {
	u, err := url.Parse(dsn)
	if err == nil {
		if perr := checkPort(u.Port()); perr != nil {
			return nil, BadDSN(fmt.Errorf("malformed DSN %s: %w", redact.DSN(dsn), perr))
		}
		return u, nil
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	reason := quotedRE.ReplaceAllString(err.Error(), "(not shown)")
	return nil, BadDSN(fmt.Errorf("malformed DSN %s: %s", redact.DSN(dsn), reason))
}

// CheckAddr checks one host:port of a DSN (a host list's, an option's
// such as addrs= or replicas=): a host, and a port in 1-65535. Its error
// does not quote addr.
func CheckAddr(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	switch {
	case err != nil:
		return errors.New("want host:port")
	case host == "":
		return errors.New("want host:port: the host is missing")
	case port == "":
		return errors.New("want host:port: the port is missing")
	}
	return checkPort(port)
}

// checkPort refuses a port that is not a number in 1-65535 ("" is no
// port, which the adapter defaults).
func checkPort(port string) error {
	if port == "" {
		return nil
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return errors.New("the port is not a number in 1-65535")
	}
	return nil
}
