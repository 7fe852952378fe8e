// Package scenarios holds the repository's scenario files (this directory's
// WORKLOAD/NAME.yaml), built into the binary. `fieldbench study` and
// `fieldbench experiment scenarios/...` read them from here where no
// checkout of the repository is: an installed binary, the container image
// (whose working directory is /results), a Kubernetes pod. No scenario
// refers to another file, so a built-in copy runs exactly as the file on
// disk does (TestEmbeddedStandAlone).
package scenarios

import (
	"embed"
	"io/fs"
	"path"
	"path/filepath"
	"strings"
)

// Dir is the directory of the repository the files come from: a relative
// path under it ("scenarios/wiki/elasticity-redis.yaml") names a built-in
// copy.
const Dir = "scenarios"

//go:embed */*.yaml
var files embed.FS

// FS holds every scenario by its path relative to Dir, e.g.
// "wiki/elasticity-redis.yaml".
func FS() fs.FS { return files }

// Names lists the built-in scenarios' paths relative to Dir, sorted.
func Names() []string {
	names, _ := fs.Glob(files, "*/*.yaml") // the pattern is valid
	return names
}

// Lookup returns the built-in scenario that p names: a relative path
// under Dir (scenarios/wiki/x.yaml, ./scenarios/wiki/x.yaml) of a file
// built in, as its name in FS. An absolute path, a path elsewhere or one
// that is not built in names none: a user's own file is never shadowed by
// a guess.
func Lookup(p string) (string, bool) {
	if p == "" || filepath.IsAbs(p) {
		return "", false
	}
	rest, ok := strings.CutPrefix(filepath.ToSlash(filepath.Clean(p)), Dir+"/")
	if !ok || !fs.ValidPath(rest) || path.Ext(rest) != ".yaml" {
		return "", false
	}
	if st, err := fs.Stat(files, rest); err != nil || !st.Mode().IsRegular() {
		return "", false
	}
	return rest, true
}
