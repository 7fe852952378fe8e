package cluster

import (
	"os"
	"path/filepath"
	"testing"
)

// Finding 3 of issue 13: cluster.json, which holds the MariaDB password in
// its DSN, was written 0644. It is written 0600, also over an older file
// and a leftover temporary file that were world-readable.
func TestSaveIsOwnerOnly(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, name := range []string{StateFile, StateFile + ".tmp"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c := &Cluster{Engine: "mariadb", Dir: dir, DSN: "mariadb://fieldbench:s3cret@127.0.0.1:3306/fieldbench"}
	if err := c.Save(); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(filepath.Join(dir, StateFile))
	if err != nil {
		t.Fatal(err)
	}
	if mode := st.Mode().Perm(); mode != 0o600 {
		t.Errorf("cluster.json mode %o, want 600", mode)
	}
	back, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if back.DSN != c.DSN {
		t.Errorf("Load: DSN %q, want %q", back.DSN, c.DSN)
	}
}
