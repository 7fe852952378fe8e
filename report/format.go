package report

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// latencyUnits converts microseconds to the largest readable unit.
var latencyUnits = []struct {
	name string
	us   float64
}{{"s", 1e6}, {"ms", 1e3}, {"µs", 1}}

// fmtUS formats a latency in microseconds with three significant digits:
// 850µs, 1.23ms, 45.6ms, 2.10s.
func fmtUS(us float64) string {
	if us <= 0 || math.IsNaN(us) {
		return "0µs"
	}
	for _, u := range latencyUnits {
		v := us / u.us
		if v >= 0.9995 || u.us == 1 {
			return sig3(v) + u.name
		}
	}
	return "" // unreachable
}

// sig3 formats v (>= 1) with three significant digits.
func sig3(v float64) string {
	switch {
	case v < 9.995:
		return strconv.FormatFloat(v, 'f', 2, 64)
	case v < 99.95:
		return strconv.FormatFloat(v, 'f', 1, 64)
	default:
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
}

// fmtTickUS formats a round latency for an axis tick: 1µs, 200µs, 5ms, 1s.
func fmtTickUS(us float64) string {
	for _, u := range latencyUnits {
		if v := us / u.us; v >= 1 || u.us == 1 {
			return strconv.FormatFloat(v, 'f', -1, 64) + u.name
		}
	}
	return ""
}

// fmtCount formats an integer with thousands separators.
func fmtCount(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// fmtRate formats an operations-per-second figure.
func fmtRate(v float64) string {
	switch {
	case v < 10:
		return strconv.FormatFloat(v, 'f', 2, 64)
	case v < 1000:
		return strconv.FormatFloat(v, 'f', 1, 64)
	default:
		return fmtCount(int64(math.Round(v)))
	}
}

// fmtNumber formats a plain figure: integers exactly with separators, others
// as fmtFigure does.
func fmtNumber(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return fmtCount(int64(v))
	}
	return fmtFigure(v)
}

// fmtFigure formats a measured figure: from 1,000 up rounded with
// separators, below with four significant digits.
func fmtFigure(v float64) string {
	if a := math.Abs(v); a >= 1e3 && a < 1e15 {
		return fmtCount(int64(math.Round(v)))
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}

// fmtBytes formats a size in binary units.
func fmtBytes(v float64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	i := 0
	for v >= 1024 && i < len(units)-1 {
		v /= 1024
		i++
	}
	if i == 0 {
		return fmtNumber(v) + " B"
	}
	return strconv.FormatFloat(v, 'f', 1, 64) + " " + units[i]
}

// fmtSeconds formats a duration in seconds: 8.0 s, 2m05s, 1h02m.
func fmtSeconds(s float64) string {
	switch {
	case s < 120:
		return strconv.FormatFloat(s, 'f', 1, 64) + " s"
	case s < 3600:
		m := int(s) / 60
		return fmt.Sprintf("%dm%02ds", m, int(s)-60*m)
	default:
		h := int(s) / 3600
		return fmt.Sprintf("%dh%02dm", h, (int(s)-3600*h)/60)
	}
}

// fmtExtra formats a Summary.Extra figure by its key's unit suffix.
func fmtExtra(key string, v float64) string {
	switch {
	case strings.HasSuffix(key, "_seconds"):
		return fmtSeconds(v)
	case strings.HasSuffix(key, "_bytes"):
		return fmtBytes(v)
	case strings.HasSuffix(key, "_us"):
		return fmtUS(v)
	case strings.HasSuffix(key, "_ms"):
		return fmtUS(v * 1e3)
	default:
		return fmtNumber(v)
	}
}

// fmtErrors formats errors by kind: "0", or "3 (conflict 1, timeout 2)".
func fmtErrors(errs map[string]int64) string {
	var total int64
	kinds := sortedKeys(errs)
	parts := make([]string, 0, len(kinds))
	for _, k := range kinds {
		total += errs[k]
		parts = append(parts, k+" "+fmtCount(errs[k]))
	}
	if len(parts) == 0 {
		return "0"
	}
	return fmtCount(total) + " (" + strings.Join(parts, ", ") + ")"
}

// fmtValue formats an option value: strings as they are, the rest as
// compact JSON (map keys sorted, no HTML escaping — the caller escapes).
func fmtValue(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Sprint(v)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// fmtPairs formats a map as "k=v, k=v" in key order.
func fmtPairs[V any](m map[string]V) string {
	parts := make([]string, 0, len(m))
	for _, k := range sortedKeys(m) {
		parts = append(parts, k+"="+fmtValue(m[k]))
	}
	return strings.Join(parts, ", ")
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// errorKindLines lists an operation's errors for a terminal, under the
// table (a kind's text in the table's column would push every column after
// it out of line): the three most frequent kinds, each cut to 100
// characters, and how many kinds are left to the report.
func errorKindLines(op string, errs map[string]int64) []string {
	kinds := sortedKeys(errs)
	sort.SliceStable(kinds, func(i, j int) bool { return errs[kinds[i]] > errs[kinds[j]] })
	var out []string
	for i, k := range kinds {
		if i == 3 {
			out = append(out, fmt.Sprintf("  %s: %d more kinds of error in the report", op, len(kinds)-3))
			break
		}
		name := k
		if len(name) > 100 {
			name = name[:100] + "…"
		}
		out = append(out, fmt.Sprintf("  %s: %s × %s", op, fmtCount(errs[k]), name))
	}
	return out
}

// errorTotal is the number of errors of all kinds.
func errorTotal(errs map[string]int64) int64 {
	var n int64
	for _, c := range errs {
		n += c
	}
	return n
}
