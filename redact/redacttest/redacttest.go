// Package redacttest holds what the tests of redaction share: whether a
// redacted string still shows the password it was given (the fuzz targets
// of redact and of every adapter's DSN check ask it).
package redacttest

import (
	"strings"

	"github.com/fieldbench/fieldbench/redact"
)

// Leaks reports whether out (a redacted DSN, an error message) shows the
// password pass that in holds (the DSN or message before redaction). A
// password that cannot be told apart from the rest of in (shorter than 3
// bytes, occurring more than once, or inside what stays visible: the mask,
// the other parts of in) is never reported, so fuzz tests over any string
// ask only what can be asked. A password made of the mask's letter 'x'
// next to URL punctuation ("//x") is compared outside the masks only.
func Leaks(out, in, pass string) bool {
	if len(pass) < 3 || strings.Count(in, pass) != 1 {
		return false
	}
	ph := placeholder(pass)
	rest := strings.Replace(in, pass, ph, 1)
	if strings.Contains(redact.Mask, pass) || strings.Contains(rest, pass) ||
		strings.Contains(strings.ReplaceAll(rest, ph, redact.Mask), pass) {
		return false
	}
	return strings.Contains(strings.ReplaceAll(out, redact.Mask, ph), pass) ||
		!strings.Contains(pass, "x") && strings.Contains(out, pass)
}

// placeholder is a one-rune string that s does not hold.
func placeholder(s string) string {
	for r := rune(0); ; r++ {
		if !strings.ContainsRune(s, r) {
			return string(r)
		}
	}
}
