package job

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/fieldbench/fieldbench/runner"
	"github.com/fieldbench/fieldbench/workload"
	"github.com/spf13/pflag"
)

// Opts holds a job's options, each declared once with its type, default,
// help and the commands it belongs to. The same declaration binds the
// command-line flags, decodes a scenario's options (every problem reported
// at once), and prints in `fieldbench list` and `--help`, so the three
// cannot drift apart.
//
// Values live in the job's own typed fields (the pointers given to Int,
// Duration...); pflag does the parsing, so a flag and a scenario value of
// the same option are read by the same code.
type Opts struct {
	fs    *pflag.FlagSet
	verbs map[string][]string
	order []string
	ptrs  map[string]any    // each option's field, for Record
	rates map[string]string // the open-loop rates (Rate), with their unit
}

// NewOpts returns an empty declaration.
func NewOpts() *Opts {
	fs := pflag.NewFlagSet("options", pflag.ContinueOnError)
	fs.SortFlags = false
	return &Opts{fs: fs, verbs: map[string][]string{}, ptrs: map[string]any{}, rates: map[string]string{}}
}

func (o *Opts) declared(name string, p any, verbs []string) {
	o.verbs[name] = verbs
	o.ptrs[name] = p
	o.order = append(o.order, name)
}

// Int declares an int option of the commands verbs ("run", "load", "op post"…;
// an option of "op" belongs to every operation).
func (o *Opts) Int(p *int, name string, def int, help string, verbs ...string) {
	o.fs.IntVar(p, name, def, help)
	o.declared(name, p, verbs)
}

// Int64 declares an int64 option.
func (o *Opts) Int64(p *int64, name string, def int64, help string, verbs ...string) {
	o.fs.Int64Var(p, name, def, help)
	o.declared(name, p, verbs)
}

// Float64 declares a float64 option.
func (o *Opts) Float64(p *float64, name string, def float64, help string, verbs ...string) {
	o.fs.Float64Var(p, name, def, help)
	Finite(o.fs.Lookup(name))
	o.declared(name, p, verbs)
}

// Rate declares an open-loop rate: a float64 option counting unit ("batches
// per second"), held by Fit to what the runner's schedule can honour
// (runner.CheckRate) for every command that has it.
func (o *Opts) Rate(p *float64, name string, unit string, help string, verbs ...string) {
	o.Float64(p, name, 0, help, verbs...)
	o.rates[name] = unit
}

// checkRates refuses a rate of command verb the schedule cannot honour.
func (o *Opts) checkRates(verb string) error {
	for _, n := range o.order {
		unit, ok := o.rates[n]
		if !ok || !inVerb(o.verbs[n], verb) {
			continue
		}
		if err := runner.CheckRate("--"+n, unit, *o.ptrs[n].(*float64)); err != nil {
			return err
		}
	}
	return nil
}

// finiteFloat is a float64 flag value that refuses NaN and ±Inf: strconv
// accepts them ("NaN", "inf"), but no option means anything with them and a
// NaN that reaches a result line cannot be encoded as JSON.
type finiteFloat struct{ pflag.Value }

func (f finiteFloat) Set(s string) error {
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err == nil && (math.IsNaN(v) || math.IsInf(v, 0)) {
		return fmt.Errorf("%q is not a finite number", s)
	}
	return f.Value.Set(s)
}

// Finite makes float64 flag f refuse NaN and ±Inf (any other flag, or nil,
// is left alone). The CLI calls it on every flag of every command, so a
// float option declared anywhere is checked the same way.
func Finite(f *pflag.Flag) {
	if f == nil || f.Value.Type() != "float64" {
		return
	}
	if _, done := f.Value.(finiteFloat); !done {
		f.Value = finiteFloat{f.Value}
	}
}

// String declares a string option.
func (o *Opts) String(p *string, name string, def string, help string, verbs ...string) {
	o.fs.StringVar(p, name, def, help)
	o.declared(name, p, verbs)
}

// Bool declares a bool option.
func (o *Opts) Bool(p *bool, name string, def bool, help string, verbs ...string) {
	o.fs.BoolVar(p, name, def, help)
	o.declared(name, p, verbs)
}

// Duration declares a time.Duration option (written 30s, 4m, 1h30m).
func (o *Opts) Duration(p *time.Duration, name string, def time.Duration, help string, verbs ...string) {
	o.fs.DurationVar(p, name, def, help)
	o.declared(name, p, verbs)
}

// inVerb reports whether an option declared for verbs belongs to command v.
func inVerb(verbs []string, v string) bool {
	for _, d := range verbs {
		if d == v || strings.HasPrefix(v, d+" ") {
			return true
		}
	}
	return false
}

// For returns the flags of command verb, in declaration order, to add to
// its flag set. The flags are shared: parsing them sets the job's fields.
func (o *Opts) For(verb string) []*pflag.Flag {
	var out []*pflag.Flag
	for _, n := range o.order {
		if inVerb(o.verbs[n], verb) {
			out = append(out, o.fs.Lookup(n))
		}
	}
	return out
}

// Has reports whether command verb has option name.
func (o *Opts) Has(verb, name string) bool {
	v, ok := o.verbs[name]
	return ok && inVerb(v, verb)
}

// Changed reports whether option name was given (flag or scenario) rather
// than left at its default.
func (o *Opts) Changed(name string) bool {
	f := o.fs.Lookup(name)
	return f != nil && f.Changed
}

// Get returns option name's value as the command line writes it ("" for
// an unknown option).
func (o *Opts) Get(name string) string {
	f := o.fs.Lookup(name)
	if f == nil {
		return ""
	}
	return f.Value.String()
}

// Set gives option name a value written as on the command line.
func (o *Opts) Set(name, value string) error {
	f := o.fs.Lookup(name)
	if f == nil {
		return fmt.Errorf("unknown option %q", name)
	}
	if err := f.Value.Set(value); err != nil {
		return fmt.Errorf("%q is not %s", value, typeWord(f.Value.Type()))
	}
	f.Changed = true
	return nil
}

// Apply sets the options of command verb from a scenario's values and
// reports every problem at once: unknown names (with the known ones), values
// of the wrong type, and options that belong to another command. where names
// a key for the message (its YAML path and line).
func (o *Opts) Apply(verb string, values map[string]any, where func(key string) string) error {
	keys := make([]string, 0, len(values))
	for k := range values {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var errs []error
	for _, k := range keys {
		v := values[k]
		switch {
		case o.fs.Lookup(k) == nil:
			errs = append(errs, fmt.Errorf("%s: unknown option %q (known: %s)", where(k), k, strings.Join(o.Names(verb), ", ")))
		case !o.Has(verb, k):
			errs = append(errs, fmt.Errorf("%s: option %q does not apply to %s (it belongs to: %s)", where(k), k, verb, strings.Join(o.verbs[k], ", ")))
		default:
			if err := o.Set(k, scalar(v)); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", where(k), err))
			}
		}
	}
	return errors.Join(errs...)
}

// scalar writes a decoded YAML value as a command-line value would be.
func scalar(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case []any, map[string]any:
		return fmt.Sprintf("%v (a list or map)", x)
	}
	return fmt.Sprint(v)
}

func typeWord(t string) string {
	switch t {
	case "int", "int64":
		return "a whole number"
	case "float64":
		return "a finite number"
	case "bool":
		return "true or false"
	case "duration":
		return "a duration like 30s or 4m"
	}
	return "a " + t
}

// Names lists the options of command verb.
func (o *Opts) Names(verb string) []string {
	var out []string
	for _, f := range o.For(verb) {
		out = append(out, f.Name)
	}
	return out
}

// Info is one option as `fieldbench list` shows it.
type Info struct {
	Name, Default, Help string
	Verbs               []string
}

// List describes every option, in declaration order.
func (o *Opts) List() []Info {
	out := make([]Info, 0, len(o.order))
	for _, n := range o.order {
		f := o.fs.Lookup(n)
		out = append(out, Info{Name: n, Default: f.DefValue, Help: f.Usage, Verbs: o.verbs[n]})
	}
	return out
}

// Record writes the values of the named options into m (a result header's
// options), keyed by their name with '-' as '_' and typed as declared
// (durations as text: "30s"), so a result says the options from their one
// declaration rather than from a second, hand-typed copy.
func (o *Opts) Record(m map[string]any, names ...string) {
	for _, n := range names {
		key := strings.ReplaceAll(n, "-", "_")
		switch p := o.ptrs[n].(type) {
		case *int:
			m[key] = *p
		case *int64:
			m[key] = *p
		case *float64:
			m[key] = *p
		case *string:
			m[key] = *p
		case *bool:
			m[key] = *p
		case *time.Duration:
			m[key] = p.String()
		default:
			panic("job: Record of an undeclared option " + n) // a programming error, found by any run of the job
		}
	}
}

// declareRetry declares --retries, --retry-backoff and --op-timeout, once for every job
// whose clients can retry (workload.Retry); what names what is retried.
func declareRetry(o *Opts, r *workload.Retry, what string, verbs ...string) {
	o.Int(&r.Max, "retries", 0, "retry a failed "+what+" up to N times, as a client with failover would (0: every failure counts, fieldbench's default); its latency counts every attempt and wait from its start", verbs...)
	o.Duration(&r.Backoff, "retry-backoff", 100*time.Millisecond, "wait before the first retry, doubled before each next one, at most "+workload.MaxRetryBackoff.String(), verbs...)
	o.Duration(&r.Timeout, "op-timeout", 0, "give up one attempt after this long: an error of kind timeout, retried under --retries (0: wait as long as the database driver does; then a node that stops answering without closing its connections, partitioned or paused, holds every client that reaches it)", verbs...)
}

// recordRetry records in a run's header options the retry options that
// were in force (none for a run without retries or timeouts, so that
// result files of runs without them stay as they were).
func recordRetry(o *Opts, options map[string]any, r workload.Retry) {
	if r.Max > 0 {
		o.Record(options, "retries", "retry-backoff")
	}
	if r.Timeout > 0 {
		o.Record(options, "op-timeout")
	}
}

// retryExtras puts what a retry policy did in a run's summary extras:
// retries, retry_recovered, retry_exhausted (nothing without retries).
func retryExtras(s *Session, r workload.Retry, rs workload.RetryStats) {
	if r.Max == 0 {
		return
	}
	s.SetExtra("retries", float64(rs.Retries))
	s.SetExtra("retry_recovered", float64(rs.Recovered))
	s.SetExtra("retry_exhausted", float64(rs.Exhausted))
}

// retryNote is a run banner's words on its retry policy ("" without one).
func retryNote(r workload.Retry) string {
	note := ""
	if r.Max > 0 {
		note = fmt.Sprintf(", failures retried up to %d times (backoff from %s)", r.Max, r.Backoff)
	}
	if r.Timeout > 0 {
		note += fmt.Sprintf(", each attempt bounded by %s", r.Timeout)
	}
	return note
}
