package cluster

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// NPMDir is where an npm package the engines run is installed:
// $envVar if set, else $XDG_CACHE_HOME/fieldbench/NAME-VERSION, else
// ~/.cache/fieldbench/NAME-VERSION (outside the repository, as
// scripts/install-servers.sh installs it). Exported, as are CheckNodeJS
// and NPMInstall, for the engines in a database's own folder that run an
// npm package (db/rethinkdb: reqlite).
func NPMDir(envVar, name, version string) (string, error) {
	if d := os.Getenv(envVar); d != "" {
		return d, nil
	}
	base := name + "-" + version
	if d := os.Getenv("XDG_CACHE_HOME"); d != "" {
		return filepath.Join(d, "fieldbench", base), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("%s: no home directory (set %s): %w", name, envVar, err)
	}
	return filepath.Join(home, ".cache", "fieldbench", base), nil
}

// CheckNodeJS reports node and npm (Node.js, not a cluster's Node)
// missing from PATH, with the packages that bring them: the Check of an
// engine whose server is an npm package.
func CheckNodeJS() error {
	var missing []string
	for _, b := range []string{"node", "npm"} {
		if _, err := exec.LookPath(b); err != nil {
			missing = append(missing, b)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%s not found in PATH: install the Debian packages nodejs and npm (scripts/install-servers.sh)", strings.Join(missing, ", "))
	}
	return nil
}

// NPMInstall installs name@version with npm into dir unless it is there (a
// marker file says the install completed), under a file lock so that
// concurrent callers wait for one install. The install goes to a
// temporary directory beside dir, renamed into place once complete.
func NPMInstall(ctx context.Context, dir, name, version string) error {
	if _, err := os.Stat(filepath.Join(dir, JarsDoneFile)); err == nil {
		return nil
	}
	if err := CheckNodeJS(); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return fmt.Errorf("install %s: %w", name, err)
	}
	unlock, err := LockFile(ctx, dir+".lock")
	if err != nil {
		return err
	}
	defer unlock()
	if _, err := os.Stat(filepath.Join(dir, JarsDoneFile)); err == nil {
		return nil
	}
	work, err := os.MkdirTemp(filepath.Dir(dir), filepath.Base(dir)+".tmp-*")
	if err != nil {
		return fmt.Errorf("install %s: %w", name, err)
	}
	defer os.RemoveAll(work)
	spec := name + "@" + version
	cmd := exec.CommandContext(ctx, "npm", "install", "--no-audit", "--no-fund", "--loglevel=error", "--prefix", work, spec)
	cmd.Dir = work
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("npm install %s: %w\n%s", spec, err, Tail(string(out), 3000))
	}
	if err := os.WriteFile(filepath.Join(work, JarsDoneFile), []byte(spec+"\n"), 0o644); err != nil {
		return fmt.Errorf("install %s: %w", name, err)
	}
	_ = os.RemoveAll(dir) // an incomplete earlier attempt
	if err := os.Rename(work, dir); err != nil {
		return fmt.Errorf("install %s: %w", name, err)
	}
	return nil
}
