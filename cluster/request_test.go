package cluster

import (
	"errors"
	"maps"
	"testing"
)

// --opt and --cluster-opt: key=value each, the last of a key kept, a
// value that holds "=" kept whole; no "=" or no key is bad input naming
// the option.
func TestParseOptions(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		opts []string
		want map[string]string // nil: refused
		err  string
	}{
		{nil, map[string]string{}, ""},
		{[]string{"replicas=1", "conf=a=b", "empty="}, map[string]string{"replicas": "1", "conf": "a=b", "empty": ""}, ""},
		{[]string{"replicas=1", "replicas=2"}, map[string]string{"replicas": "2"}, ""},
		{[]string{"replicas"}, nil, `--opt "replicas" is not key=value`},
		{[]string{"ok=1", "=1"}, nil, `--opt "=1" is not key=value`},
	} {
		got, err := ParseOptions(c.opts)
		switch {
		case c.want == nil && (err == nil || err.Error() != c.err || !errors.Is(err, ErrBadInput)):
			t.Errorf("%q: %v, want %q wrapping ErrBadInput", c.opts, err, c.err)
		case c.want != nil && (err != nil || !maps.Equal(got, c.want)):
			t.Errorf("%q: %v, %v, want %v", c.opts, got, err, c.want)
		}
	}
}

// --cluster ENGINE:NODES: the engine as given (Up checks it), a whole
// node count; anything else is bad input naming the spec.
func TestParseSpec(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		spec   string
		engine string
		nodes  int
		ok     bool
	}{
		{"postgres:2", "postgres", 2, true},
		{"nosuch:0", "nosuch", 0, true},
		{"redis:-1", "redis", -1, true},
		{"postgres", "", 0, false},
		{"postgres:", "", 0, false},
		{"postgres:two", "", 0, false},
		{"postgres:2:3", "", 0, false},
	} {
		e, n, err := ParseSpec(c.spec)
		if c.ok && (err != nil || e != c.engine || n != c.nodes) {
			t.Errorf("%q: %q, %d, %v, want %q, %d", c.spec, e, n, err, c.engine, c.nodes)
		}
		if !c.ok && (err == nil || !errors.Is(err, ErrBadInput) || err.Error() != `--cluster "`+c.spec+`" is not ENGINE:NODES (e.g. postgres:2)`) {
			t.Errorf("%q: %v, want it refused as bad input", c.spec, err)
		}
	}
}
