package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/fieldbench/fieldbench/redact"
)

// A Template is a node action of an external cluster written as a command,
// e.g. "ssh {host} sudo systemctl kill -s KILL cassandra". It is split into
// words the way a POSIX shell splits a simple command (blanks separate
// words; '...' keeps everything literally; "..." keeps everything but \" and
// \\; a backslash outside quotes escapes the next character), and the
// placeholders are replaced inside each word afterwards: a value never adds
// or splits words and is never interpreted by a shell. There are no
// pipes, redirections, variables or globbing unless Shell is set, in which
// case the template is given to `sh -c` with every value single-quoted.
// {{ and }} are literal braces; any other {word} must be a placeholder.
type Template struct {
	Text  string
	Shell bool
	words []string
}

// Placeholders a template can use, with what they are.
var Placeholders = map[string]string{
	"name": "the node's name",
	"host": "the node's host",
	"port": "the node's client port",
	"addr": "host:port",
	"n":    "how many nodes the cluster has once the action is done (removed nodes not counted)",
}

// NodePlaceholders are the placeholders that name one node: an add has
// them only when the scenario declares the spare nodes it adds.
var NodePlaceholders = []string{"name", "host", "port", "addr"}

var placeholderRE = regexp.MustCompile(`\{\{|\}\}|\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// ParseTemplate splits text into words and checks its placeholders: every
// problem (an unclosed quote, an unknown placeholder, an empty command) is
// an error naming it.
func ParseTemplate(text string, shell bool) (*Template, error) {
	t := &Template{Text: text, Shell: shell}
	if strings.TrimSpace(text) == "" {
		return nil, errors.New("empty command")
	}
	if !shell {
		w, err := splitWords(text)
		if err != nil {
			return nil, err
		}
		t.words = w
	}
	var unknown []string
	for _, m := range placeholderRE.FindAllStringSubmatch(text, -1) {
		if m[1] != "" {
			if _, ok := Placeholders[m[1]]; !ok {
				unknown = append(unknown, "{"+m[1]+"}")
			}
		}
	}
	if len(unknown) > 0 {
		return nil, fmt.Errorf("unknown placeholder %s (known: %s; write {{ and }} for literal braces)", strings.Join(unknown, ", "), knownPlaceholders())
	}
	return t, nil
}

func knownPlaceholders() string {
	var k []string
	for p := range Placeholders {
		k = append(k, "{"+p+"}")
	}
	sort.Strings(k)
	return strings.Join(k, " ")
}

// Uses lists the placeholders the template uses, sorted.
func (t *Template) Uses() []string {
	seen := map[string]bool{}
	for _, m := range placeholderRE.FindAllStringSubmatch(t.Text, -1) {
		if m[1] != "" {
			seen[m[1]] = true
		}
	}
	out := make([]string, 0, len(seen))
	for p := range seen {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// Argv is the command with the values filled in: the words for exec, or
// sh -c with the values single-quoted when Shell is set. A placeholder
// without a value is an error.
func (t *Template) Argv(values map[string]string) ([]string, error) {
	var missing []string
	fill := func(s string, quote func(string) string) string {
		return placeholderRE.ReplaceAllStringFunc(s, func(m string) string {
			switch m {
			case "{{":
				return "{"
			case "}}":
				return "}"
			}
			v, ok := values[m[1:len(m)-1]]
			if !ok {
				missing = append(missing, m)
			}
			return quote(v)
		})
	}
	var argv []string
	if t.Shell {
		argv = []string{"sh", "-c", fill(t.Text, shellQuote)}
	} else {
		for _, w := range t.words {
			argv = append(argv, fill(w, func(s string) string { return s }))
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("no value for %s here", strings.Join(missing, ", "))
	}
	return argv, nil
}

// shellQuote quotes s for sh: '...' with every ' written as '\”.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// splitWords splits s like a POSIX shell splits a simple command's words.
func splitWords(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, fmt.Errorf("unclosed ' in %q", s)
			}
			cur.WriteString(s[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case c == '"':
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) && (s[i+1] == '"' || s[i+1] == '\\') {
					i++
				}
				cur.WriteByte(s[i])
			}
			if i >= len(s) {
				return nil, fmt.Errorf("unclosed \" in %q", s)
			}
			inWord = true
		case c == '\\':
			if i+1 >= len(s) {
				return nil, fmt.Errorf("a \\ ends %q", s)
			}
			i++
			cur.WriteByte(s[i])
			inWord = true
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	if len(words) == 0 {
		return nil, errors.New("empty command")
	}
	return words, nil
}

// CommandError is a node action's command that failed: its exit code (-1
// when it did not run or was killed at its timeout) and the end of its
// output.
type CommandError struct {
	Action string
	Argv   []string
	Code   int
	Tail   string
	Err    error
}

func (e *CommandError) Error() string {
	what := fmt.Sprintf("%s: command %s", e.Action, strings.Join(e.Argv, " "))
	switch {
	case e.Code >= 0:
		what += fmt.Sprintf(" exited with code %d", e.Code)
	default:
		what += fmt.Sprintf(": %v", e.Err)
	}
	if e.Tail != "" {
		what += "; its output ends with: " + e.Tail
	}
	return what
}

func (e *CommandError) Unwrap() error { return e.Err }

// runCommand runs argv with a timeout, its output (stdout and stderr)
// copied into log after a header line, and returns a *CommandError when it
// could not run, timed out or exited with a code other than 0. The header
// line shows the command with its secrets masked (redact.Command,
// secrets among them): the log lies in the experiment's directory.
func runCommand(ctx context.Context, action string, argv []string, timeout time.Duration, log io.Writer, secrets ...string) error {
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(cctx, argv[0], argv[1:]...)
	// A command whose children keep its output open (ssh -f, a server it
	// started) must not hold the action past its timeout.
	cmd.WaitDelay = 5 * time.Second
	var tail tailBuffer
	out := io.MultiWriter(log, &tail)
	cmd.Stdout, cmd.Stderr = out, out
	fmt.Fprintf(log, "--- %s %s: %s\n", time.Now().UTC().Format(time.RFC3339), action, redact.Command(strings.Join(argv, " "), secrets...))
	t0 := time.Now()
	err := cmd.Run()
	code := -1
	if cmd.ProcessState != nil {
		code = cmd.ProcessState.ExitCode()
	}
	fmt.Fprintf(log, "--- exit %d after %.1fs\n", code, time.Since(t0).Seconds())
	switch {
	case cctx.Err() == context.DeadlineExceeded && ctx.Err() == nil:
		return &CommandError{Action: action, Argv: argv, Code: -1, Tail: tail.String(), Err: fmt.Errorf("timed out after %s", timeout)}
	case err != nil:
		var ee *exec.ExitError
		if errors.As(err, &ee) && code >= 0 {
			return &CommandError{Action: action, Argv: argv, Code: code, Tail: tail.String(), Err: err}
		}
		return &CommandError{Action: action, Argv: argv, Code: -1, Tail: tail.String(), Err: err}
	}
	return nil
}

// tailBuffer keeps the last 400 bytes written, for error messages.
type tailBuffer struct{ b []byte }

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if len(t.b) > 400 {
		t.b = append(t.b[:0], t.b[len(t.b)-400:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	return strings.Join(strings.Fields(string(bytes.ToValidUTF8(t.b, nil))), " ")
}
