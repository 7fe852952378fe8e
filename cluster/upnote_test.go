package cluster

import (
	"path/filepath"
	"strings"
	"testing"
)

// Before a cluster's first server starts (and so before a run on it,
// run --cluster), fieldbench says where the cluster's state is and the
// command that stops its servers: a SIGKILL runs no clean-up, and the
// servers it leaves are then found by that command alone.
func TestUpNoteSaysHowToStopTheServers(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "results", "cluster-redis-20261202-010000")
	note := UpNote("redis", 1, dir)
	for _, want := range []string{
		"starting redis with 1 node(s) in " + dir,
		filepath.Join(dir, "cluster.json"),
		"fieldbench cluster down --dir " + dir + "\n",
	} {
		if !strings.Contains(note, want) {
			t.Errorf("the note %q does not say %q", note, want)
		}
	}
}
