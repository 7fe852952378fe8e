// Package outpath is fieldbench's one rule for the paths it writes: a name
// that comes from input (a scenario's name, a step's, a node's, a result
// header's workload) becomes exactly one entry of the directory it belongs
// to (Component), and an output file named on the command line never
// replaces a file fieldbench reads back (Output). Both are asked before any
// work starts, so a refusal costs nothing.
//
// It imports nothing of fieldbench's, so every package that builds a path
// (job, experiment, study, the CLI) can use it without an import cycle;
// the names of the files it protects are pinned to their packages' own
// constants by a test.
package outpath

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxComponent is the longest name one directory entry may have, in bytes
// (NAME_MAX of Linux's file systems, and of most others).
const MaxComponent = 255

// Component refuses a name that would not be exactly one new entry of the
// directory it is joined to: empty, "." or "..", holding a separator ('/'
// or '\\', so no absolute path either), a NUL, a newline or another
// control character (a name that cannot be shown on one terminal line, or
// is cut at the NUL by the kernel), invalid UTF-8, or longer than
// MaxComponent bytes. Anything else — spaces, dots inside, any printable
// letter — is allowed: the rule refuses what escapes or breaks, not what
// looks unusual.
func Component(name string) error {
	switch {
	case name == "":
		return errors.New("is empty")
	case name == "." || name == "..":
		return fmt.Errorf("%q names a directory itself, not an entry in it", name)
	case strings.ContainsAny(name, `/\`):
		return fmt.Errorf("%s holds a path separator (/ or \\): it must be one name, not a path", Quote(name))
	case !utf8.ValidString(name):
		return fmt.Errorf("%s is not valid UTF-8", Quote(name))
	case len(name) > MaxComponent:
		return fmt.Errorf("%s is %d bytes; a name in a path may have at most %d", cut(name), len(name), MaxComponent)
	}
	for _, r := range name {
		if unicode.IsControl(r) {
			return fmt.Errorf("%s holds a control character (%U): a NUL, newline or tab has no place in a file name", Quote(name), r)
		}
	}
	return nil
}

// quoteMax bounds how much of a refused name an error shows: a 4 KB name
// is one line of message, not a screenful.
const quoteMax = 60

// Quote is name as Go quotes it (control characters escaped), cut to
// quoteMax bytes with its length said when longer.
func Quote(name string) string {
	if len(name) <= quoteMax {
		return fmt.Sprintf("%q", name)
	}
	return fmt.Sprintf("%s (%d bytes)", cut(name), len(name))
}

// cut is name quoted, cut to quoteMax bytes (on a rune's start) with an
// ellipsis when longer.
func cut(name string) string {
	if len(name) <= quoteMax {
		return fmt.Sprintf("%q", name)
	}
	n := quoteMax
	for n > 0 && !utf8.RuneStart(name[n]) {
		n--
	}
	return fmt.Sprintf("%q…", name[:n])
}

// Read files: the names of the files fieldbench reads back, and what each
// is. They are pinned to result.FileName, cluster.StateFile and the HDR
// log exporter by a test (outpath cannot import those packages). A history
// database, if one appears, goes here too.
var readNames = map[string]string{
	"result.jsonl": "a run's result file",
	"cluster.json": "a cluster's saved state",
}

// readExts are endings of files fieldbench writes for other tools to read
// and would lose with the run: the HDR interval logs (hdr/<op>.hlog).
var readExts = map[string]string{
	".hlog": "an HDR histogram log",
}

// readMagic are the first bytes of files fieldbench reads or keeps, under
// any name: a result file copied or renamed (scores and compare read any
// file given), a run's embedded SQLite database, an HDR log.
var readMagic = []struct {
	prefix, what string
}{
	{`{"kind":"header"`, "a fieldbench result file"},
	{"SQLite format 3\x00", "an SQLite database"},
	{"#[Histogram log format version", "an HDR histogram log"},
}

// Output refuses, before any work, an output file that would replace a
// file fieldbench reads: one named like a result file, a cluster's state
// or an HDR log (wherever it is), an existing file that is one of those
// or an SQLite database by its content, or the same file as one of inputs
// (the arguments the command reads, run directories or files). A path
// that is a symbolic link is judged by what it points to as well. The
// error says which rule refused and why; what it does not check is
// whether the file can be written (the caller's own check).
func Output(path string, inputs ...string) error {
	if path == "" {
		return errors.New("is empty")
	}
	targets := []string{path}
	if real, err := filepath.EvalSymlinks(path); err == nil && real != filepath.Clean(path) {
		targets = append(targets, real)
	}
	for i, p := range targets {
		name := path
		if i > 0 {
			name = fmt.Sprintf("%s (a link to %s)", path, p)
		}
		base := filepath.Base(p)
		if what, ok := readNames[base]; ok {
			return fmt.Errorf("%s would replace %s, which fieldbench reads back (%s): write the output elsewhere", name, what, base)
		}
		if what, ok := readExts[filepath.Ext(base)]; ok {
			return fmt.Errorf("%s is named like %s (%s), which fieldbench does not write over: choose another name", name, what, filepath.Ext(base))
		}
	}
	st, err := os.Stat(path)
	if err != nil {
		return nil // nothing there to replace
	}
	for _, in := range inputs {
		ist, err := os.Stat(in)
		if err != nil {
			continue
		}
		switch {
		case !os.SameFile(st, ist):
		case filepath.Clean(in) == filepath.Clean(path):
			return fmt.Errorf("%s is an input of this command: the output would replace what it reads", path)
		default:
			return fmt.Errorf("%s is the same file as %s, an input of this command: the output would replace what it reads", path, in)
		}
	}
	if st.Mode().IsRegular() {
		if what := sniff(path); what != "" {
			return fmt.Errorf("%s is %s: fieldbench does not write over one, choose another name", path, what)
		}
	}
	return nil
}

// sniff names what path holds by its first bytes ("" when none of
// readMagic, or unreadable: a file that cannot be read cannot be
// compared, and the write will say what is wrong).
func sniff(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	head := make([]byte, 64)
	n, _ := io.ReadFull(f, head)
	head = head[:n]
	for _, m := range readMagic {
		if bytes.HasPrefix(head, []byte(m.prefix)) {
			return m.what
		}
	}
	return ""
}
