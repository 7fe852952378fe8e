// Package redact masks the secrets of DSNs, of free text that may quote
// one (a driver's error message) and of command lines, so that a password
// never reaches output, errors, result files or reports. It stands below
// every package that shows a DSN (result, adapter, cluster, history, job,
// report, the CLI) and imports none of fieldbench's own.
package redact

import (
	"net/url"
	"strings"
)

// Mask is what DSN, Text and Command write in place of a secret.
const Mask = "xxxxx"

// DSN hides the secrets of one DSN so that it can be printed, logged, or
// written to a result file or a report. It is the one function every
// place that shows a DSN must call. It masks:
//
//   - the password of a URL's userinfo (scheme://user:PASSWORD@host);
//   - the value of any password-like parameter (password, sslpassword,
//     pass, passwd, pwd, auth, and any key holding "password", "secret" or
//     "token"; in any case, percent-encoded or not), in a URL query
//     (?password=x&...) or in key=value form (host=h password=x, quoted
//     values included);
//   - the password of a driver DSN without a scheme (user:pass@tcp(h)/db).
//
// A URL that does not parse, or parses in a way a password with '#', '/',
// '?' or an unescaped '@' could have bent (a fragment, an '@' after the
// host), is treated as hostile: everything before its last '@' is masked,
// and with no '@' everything after the scheme is. So DSN never returns a
// string that did not parse unchanged; it may mask more than the secret,
// never less; a URL whose password could be read as a query parameter
// (user:?pass=x@host) or whose query value holds an '@' is masked whole
// after its scheme. A password the driver itself would not see whole (one
// with an unescaped '&' in a query) is masked up to that '&'.
func DSN(dsn string) string {
	if driverForm(dsn) {
		// user:password@tcp(host)/db: the driver takes everything up to
		// the last '@' for the userinfo, '=' and spaces included, so a
		// password such as " pass=" must not be read as a key=value pair
		// whose value swallows the '@' (found by FuzzRedact).
		return redactParams(redactUserinfo(dsn))
	}
	// Parameters first: a value holding '@' must not be taken for the end
	// of a userinfo (which would hide its key from redactParams). But a
	// password holding "?key=" must not be taken for a parameter whose
	// value swallows the userinfo's '@' either (found by FuzzRedact), and
	// no one reading can tell which was meant: when the two orders
	// disagree on a URL, everything after the scheme is masked. (Without a
	// scheme, key=value pairs come first: "password=p@ss" is common there.)
	r := redactUserinfo(redactParams(dsn))
	if scheme, _, ok := strings.Cut(dsn, "://"); ok && ValidScheme(scheme) && r != redactParams(redactUserinfo(dsn)) {
		return scheme + "://" + Mask
	}
	return r
}

// notInUser are the characters no user name in a DSN holds: a "user"
// part holding one is not a user name.
const notInUser = "/?#@ \t\r\n=&'\""

// driverForm reports whether s is a scheme-less driver DSN
// (user:password@...): it starts with a user name and a ':' and holds an
// '@'. A key=value DSN (host=... password=...) starts with a key, which
// holds '=' or white space before any ':'.
func driverForm(s string) bool {
	if scheme, _, ok := strings.Cut(s, "://"); ok && ValidScheme(scheme) {
		return false
	}
	user, _, ok := strings.Cut(s, ":")
	return ok && user != "" && strings.Contains(s, "@") && !strings.ContainsAny(user, notInUser)
}

// Text masks every DSN found in free text, such as an error message
// a driver wrote: password-like key=value pairs anywhere, then each
// whitespace-separated word holding "://" or '@' as a DSN (from its scheme
// on, so quotes and words around it stay).
func Text(s string) string {
	if !strings.ContainsAny(s, "@=") && !strings.Contains(s, "://") {
		return s
	}
	// A driver DSN's userinfo first: its password may hold "&key=",
	// which redactParams would take for a query parameter whose value runs
	// over the '@' and hides the rest of the password (found by FuzzRedact).
	// So is a URL's, as DSN does it.
	s = mapWords(s, func(w string) string {
		if driverForm(w) {
			return redactUserinfo(w)
		}
		if start := schemeStart(w); start >= 0 {
			return w[:start] + DSN(w[start:])
		}
		return w
	})
	return mapWords(redactParams(s), redactWord)
}

// mapWords replaces each whitespace-separated word of s by f of it,
// keeping the white space between words.
func mapWords(s string, f func(string) string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		if isSpace(s[i]) {
			b.WriteByte(s[i])
			i++
			continue
		}
		j := i
		for j < len(s) && !isSpace(s[j]) {
			j++
		}
		b.WriteString(f(s[i:j]))
		i = j
	}
	return b.String()
}

// redactWord redacts one word of free text: from the start of its scheme
// when it holds "://", else as a scheme-less DSN.
func redactWord(w string) string {
	start := schemeStart(w)
	if start < 0 {
		if strings.Contains(w, "@") {
			return redactUserinfo(w)
		}
		return w
	}
	r := w[:start] + redactUserinfo(w[start:])
	// A ':' before the scheme (user:pa://ss@host) may start a password
	// that runs into what looked like a scheme.
	if at := strings.LastIndex(r, "@"); at >= 0 && strings.Contains(w[:start], ":") {
		r = maskUserinfo(r[:at], false) + r[at:]
	}
	return r
}

// schemeStart is where the scheme of the first "://" in w starts; -1
// when w holds none.
func schemeStart(w string) int {
	start := strings.Index(w, "://")
	for start > 0 && isSchemeChar(w[start-1]) {
		start--
	}
	return start
}

// redactUserinfo masks the password of a URL's userinfo, or everything
// that could hold one when the URL does not parse cleanly.
func redactUserinfo(s string) string {
	scheme, rest, ok := strings.Cut(s, "://")
	if !ok || !ValidScheme(scheme) {
		// No URL: a driver DSN (user:pass@tcp(host)/db), key=value pairs
		// or a path. Whatever precedes the last '@' may be a userinfo.
		at := strings.LastIndex(s, "@")
		if at < 0 {
			return s
		}
		return maskUserinfo(s[:at], false) + s[at:]
	}
	if u, err := url.Parse(s); err == nil && cleanURL(u, s, rest) {
		authority := rest[:authorityEnd(rest)]
		at := strings.LastIndex(authority, "@")
		if at < 0 {
			return s
		}
		return scheme + "://" + maskUserinfo(rest[:at], true) + rest[at:]
	}
	at := strings.LastIndex(rest, "@")
	if at < 0 {
		return scheme + "://" + Mask
	}
	return scheme + "://" + maskUserinfo(rest[:at], false) + rest[at:]
}

// cleanURL reports whether u parsed from s without anything a password
// holding '#', '/', '?' or '@' could have produced: no fragment, no opaque
// part, and no '@' after the authority.
func cleanURL(u *url.URL, s, rest string) bool {
	if u.Opaque != "" || u.Fragment != "" || strings.Contains(s, "#") {
		return false
	}
	return !strings.Contains(rest[authorityEnd(rest):], "@")
}

// authorityEnd is where a URL's authority ends in rest (after "://"): at
// its first '/', '?' or '#', as net/url cuts it.
func authorityEnd(rest string) int {
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		return i
	}
	return len(rest)
}

// maskUserinfo masks the password of user:password. A userinfo without a
// ':' is a user name when the URL parsed (clean), and may be anything
// otherwise, so it is masked whole; so is one whose user part holds a
// character no user name in a DSN has.
func maskUserinfo(ui string, clean bool) string {
	user, _, hasPw := strings.Cut(ui, ":")
	switch {
	case !hasPw && clean:
		return ui
	case !hasPw, strings.ContainsAny(user, notInUser):
		return Mask
	default:
		return user + ":" + Mask
	}
}

// ValidScheme reports whether s is a URL scheme (RFC 3986: a letter, then
// letters, digits, '+', '-' or '.'): what tells a URL DSN from a
// driver DSN here, and a DSN that names its adapter in adapter.ForDSN.
func ValidScheme(s string) bool {
	if s == "" || !isLetter(s[0]) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isSchemeChar(s[i]) {
			return false
		}
	}
	return true
}

func isLetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

func isSchemeChar(c byte) bool {
	return isLetter(c) || '0' <= c && c <= '9' || c == '+' || c == '-' || c == '.'
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

// redactParams masks the values of password-like keys in key=value pairs:
// a URL query's (after '?' or '&', the value running to the next '&') and
// a key=value DSN's (the value running to the next white space, or quoted
// with ' or " as libpq allows, spaces around '=' included).
func redactParams(s string) string {
	if !strings.Contains(s, "=") {
		return s
	}
	var b strings.Builder
	i := 0
	for i < len(s) {
		eq := strings.IndexByte(s[i:], '=')
		if eq < 0 {
			break
		}
		eq += i
		kEnd := eq
		for kEnd > i && (s[kEnd-1] == ' ' || s[kEnd-1] == '\t') {
			kEnd--
		}
		kStart := kEnd
		for kStart > i && !isParamSep(s[kStart-1]) {
			kStart--
		}
		inQuery := kStart > 0 && (s[kStart-1] == '?' || s[kStart-1] == '&')
		v := eq + 1
		for v < len(s) && (s[v] == ' ' || s[v] == '\t') && !inQuery {
			v++
		}
		vEnd := valueEnd(s, v, inQuery)
		key := s[kStart:kEnd]
		switch {
		case vEnd > v && secretKey(key) && strings.ContainsAny(key, ":/@"):
			// No parameter name holds these: the "key" runs over a
			// userinfo (user:pa-password=...@host), so it goes too.
			b.WriteString(s[i:kStart])
			b.WriteString(Mask)
		case vEnd > v && secretKey(key):
			b.WriteString(s[i:v])
			b.WriteString(Mask)
		default:
			b.WriteString(s[i:vEnd])
		}
		i = vEnd // > eq >= i: the loop advances
	}
	b.WriteString(s[i:])
	return b.String()
}

func isParamSep(c byte) bool { return c == '?' || c == '&' || c == ';' || isSpace(c) }

// valueEnd is where the value starting at v ends: at the next '&' in a URL
// query, else at white space, a quoted value running to its closing quote
// (backslash escapes) and on to the next white space.
func valueEnd(s string, v int, inQuery bool) int {
	j := v
	if inQuery {
		for j < len(s) && s[j] != '&' {
			j++
		}
		return j
	}
	if j < len(s) && (s[j] == '\'' || s[j] == '"') {
		q := s[j]
		for j++; j < len(s); j++ {
			if s[j] == '\\' {
				j++
				continue
			}
			if s[j] == q {
				j++
				break
			}
		}
		j = min(j, len(s))
	}
	for j < len(s) && !isSpace(s[j]) {
		j++
	}
	return j
}

// secretKey reports whether a parameter name is password-like, in any case
// and percent-encoded or not.
func secretKey(k string) bool {
	if d, err := url.QueryUnescape(k); err == nil {
		k = d
	}
	k = strings.ToLower(strings.TrimSpace(k))
	switch k {
	case "pass", "passwd", "pwd", "auth", "sslpassword", "password":
		return true
	}
	return strings.Contains(k, "password") || strings.Contains(k, "passwd") ||
		strings.Contains(k, "secret") || strings.Contains(k, "token")
}

// Command masks the secrets of a command line (an external cluster's
// kill or restart template) so that it can be printed: what Text
// masks (password-like key=value pairs such as PGPASSWORD=x or
// --password=x, DSNs), the word after a password-like option
// (--password x, --auth x, -a x as redis-cli takes it), and every
// occurrence of one of secrets (the scenario's DSN's password, which a
// command often repeats in a form no pattern recognizes).
func Command(cmd string, secrets ...string) string {
	for _, s := range secrets {
		if len(s) >= 3 { // a one- or two-letter "secret" would mask words
			cmd = strings.ReplaceAll(cmd, s, Mask)
		}
	}
	cmd = Text(cmd)
	words := strings.Fields(cmd)
	for i := 0; i+1 < len(words); i++ {
		if secretFlag(words[i]) {
			cmd = strings.Replace(cmd, words[i]+" "+words[i+1], words[i]+" "+Mask, 1)
		}
	}
	return cmd
}

// secretFlag reports whether a command-line word is an option whose value
// is a secret: --password, -password, --auth, --token..., and redis-cli's
// -a.
func secretFlag(w string) bool {
	if !strings.HasPrefix(w, "-") || strings.Contains(w, "=") {
		return false
	}
	name := strings.TrimLeft(w, "-")
	return w == "-a" || (name != "" && secretKey(name))
}

// PasswordOf is the password dsn holds (its URL userinfo's, or a
// password-like parameter's), "" when it holds none: what Command
// must also find where no pattern would.
func PasswordOf(dsn string) string {
	if u, err := url.Parse(dsn); err == nil {
		if pw, ok := u.User.Password(); ok {
			return pw
		}
		for k, vs := range u.Query() {
			if secretKey(k) && len(vs) > 0 {
				return vs[0]
			}
		}
	}
	if driverForm(dsn) {
		ui := dsn[:strings.LastIndex(dsn, "@")]
		if _, pw, ok := strings.Cut(ui, ":"); ok {
			return pw
		}
	}
	return ""
}
