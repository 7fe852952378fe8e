package cluster

import (
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
)

// Find loads the cluster in dir, or, with dir "", the only one under root
// (root/*/StateFile): what every command on a running cluster (status,
// add, kill, down...) acts on. No cluster there, several, or a state that
// cannot be read is the caller's bad input (ErrBadInput); an engine this
// fieldbench does not know is not.
func Find(root, dir string) (*Cluster, Engine, error) {
	if dir == "" {
		matches, _ := filepath.Glob(filepath.Join(root, "*", StateFile))
		switch len(matches) {
		case 0:
			return nil, nil, badInputf("no cluster found under %s/: pass --dir", root)
		case 1:
			dir = filepath.Dir(matches[0])
		default:
			sort.Strings(matches)
			return nil, nil, badInputf("several clusters under %s/ (%s): pass --dir", root, strings.Join(matches, ", "))
		}
	}
	cl, err := Load(dir)
	if err != nil {
		return nil, nil, badInput{err}
	}
	e, err := Get(cl.Engine)
	if err != nil {
		return nil, nil, err
	}
	return cl, e, nil
}

// WriteStatus writes st as `cluster status` shows it: a line a node
// (NODE, ADDR, ROLE, STATE, PID, DETAIL), "-" for no PID, the engine's
// facts as key=value sorted by key, so two statuses compare line by line.
func WriteStatus(w io.Writer, st []NodeStatus) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tADDR\tROLE\tSTATE\tPID\tDETAIL")
	for _, s := range st {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", s.Name, s.Addr, s.Role, s.State, pidString(s.PID), details(s.Detail))
	}
	return tw.Flush()
}

func pidString(pid int) string {
	if pid == 0 {
		return "-"
	}
	return strconv.Itoa(pid)
}

func details(m map[string]string) string {
	keys := slices.Sorted(maps.Keys(m))
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + m[k]
	}
	return strings.Join(parts, " ")
}
