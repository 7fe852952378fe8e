package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// JVM servers (Cassandra, HBase) run from Maven Central jars rather than
// distribution packages: Debian has none for them, and Maven Central is a
// registry every machine of the project reaches. FetchJars resolves a set of
// artifacts with their runtime dependencies once and caches the jars; later
// calls (other tests, other fieldbench processes) reuse the directory.

// JarsDoneFile marks a cache directory whose fetch completed.
const JarsDoneFile = ".complete"

// JarCacheDir is where FetchJars keeps its directories:
// $FIELDBENCH_JARS if set, else $XDG_CACHE_HOME/fieldbench/jars, else
// ~/.cache/fieldbench/jars.
func JarCacheDir() (string, error) {
	if d := os.Getenv("FIELDBENCH_JARS"); d != "" {
		return d, nil
	}
	if d := os.Getenv("XDG_CACHE_HOME"); d != "" {
		return filepath.Join(d, "fieldbench", "jars"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("jar cache: no home directory (set FIELDBENCH_JARS): %w", err)
	}
	return filepath.Join(home, ".cache", "fieldbench", "jars"), nil
}

// CheckMaven reports whether java and mvn are installed, naming the script
// that installs them.
func CheckMaven() error {
	var missing []string
	for _, b := range []string{"java", "mvn"} {
		if _, err := exec.LookPath(b); err != nil {
			missing = append(missing, b)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%s not found in PATH: install the Debian packages openjdk-17-jre-headless and maven (scripts/install-servers.sh)", strings.Join(missing, ", "))
	}
	return nil
}

// FetchJars returns a directory holding the jars of the artifacts gav
// ("group:artifact:version") and of all their runtime dependencies, under
// JarCacheDir()/cacheName. The first call resolves them with `mvn
// dependency:copy-dependencies` from a generated pom (Maven keeps its own
// download cache in ~/.m2 as usual); later calls return at once. Concurrent
// callers, in this process or others, wait for one fetch under a file lock.
func FetchJars(ctx context.Context, gav []string, cacheName string) (string, error) {
	if len(gav) == 0 || cacheName == "" || strings.ContainsAny(cacheName, `/\`) {
		return "", fmt.Errorf("fetch jars: want artifacts and a plain cache name (got %v, %q)", gav, cacheName)
	}
	root, err := JarCacheDir()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(root, cacheName)
	if _, err := os.Stat(filepath.Join(dir, JarsDoneFile)); err == nil {
		return dir, nil
	}
	if err := CheckMaven(); err != nil {
		return "", err
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", fmt.Errorf("fetch jars: %w", err)
	}
	unlock, err := LockFile(ctx, filepath.Join(root, cacheName+".lock"))
	if err != nil {
		return "", err
	}
	defer unlock()
	if _, err := os.Stat(filepath.Join(dir, JarsDoneFile)); err == nil {
		return dir, nil // another process fetched them while we waited
	}
	pom, err := pomFor(gav)
	if err != nil {
		return "", err
	}
	work, err := os.MkdirTemp(root, cacheName+".tmp-*")
	if err != nil {
		return "", fmt.Errorf("fetch jars: %w", err)
	}
	defer os.RemoveAll(work)
	if err := os.WriteFile(filepath.Join(work, "pom.xml"), []byte(pom), 0o644); err != nil {
		return "", fmt.Errorf("fetch jars: %w", err)
	}
	lib := filepath.Join(work, "lib")
	cmd := exec.CommandContext(ctx, "mvn", "-B", "-q", "-f", filepath.Join(work, "pom.xml"),
		"dependency:copy-dependencies", "-DincludeScope=runtime", "-DoutputDirectory="+lib)
	cmd.Dir = work
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("fetch jars %v with mvn: %w\n%s", gav, err, Tail(string(out), 3000))
	}
	if err := os.WriteFile(filepath.Join(lib, JarsDoneFile), []byte(strings.Join(gav, "\n")+"\n"), 0o644); err != nil {
		return "", fmt.Errorf("fetch jars: %w", err)
	}
	_ = os.RemoveAll(dir) // an incomplete earlier attempt
	if err := os.Rename(lib, dir); err != nil {
		return "", fmt.Errorf("fetch jars: %w", err)
	}
	return dir, nil
}

// pomFor is a pom whose dependencies are gav. An artifact may name
// exclusions: "g:a:v;exclude=g1:a1,g2:*" (HBase's REST gateway is published
// only against another HBase build, so its HBase and Hadoop dependencies are
// excluded in favour of the ones the server jars bring).
func pomFor(gav []string) (string, error) {
	var b strings.Builder
	b.WriteString(`<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>fieldbench</groupId><artifactId>jars</artifactId><version>1</version>
  <packaging>pom</packaging>
  <dependencies>
`)
	for _, a := range gav {
		if strings.ContainsAny(a, "<>&\"' ") {
			return "", fmt.Errorf("fetch jars: artifact %q: want group:artifact:version[;exclude=group:artifact,...]", a)
		}
		coord, excl, _ := strings.Cut(a, ";exclude=")
		p := strings.Split(coord, ":")
		if len(p) != 3 || p[0] == "" || p[1] == "" || p[2] == "" {
			return "", fmt.Errorf("fetch jars: artifact %q: want group:artifact:version[;exclude=group:artifact,...]", a)
		}
		fmt.Fprintf(&b, "    <dependency><groupId>%s</groupId><artifactId>%s</artifactId><version>%s</version>", p[0], p[1], p[2])
		if excl != "" {
			b.WriteString("<exclusions>")
			for _, x := range strings.Split(excl, ",") {
				g, art, ok := strings.Cut(x, ":")
				if !ok || g == "" || art == "" {
					return "", fmt.Errorf("fetch jars: exclusion %q of %q: want group:artifact", x, coord)
				}
				fmt.Fprintf(&b, "<exclusion><groupId>%s</groupId><artifactId>%s</artifactId></exclusion>", g, art)
			}
			b.WriteString("</exclusions>")
		}
		b.WriteString("</dependency>\n")
	}
	b.WriteString("  </dependencies>\n</project>\n")
	return b.String(), nil
}

// LockFile takes an exclusive flock on path, polling until ctx ends, and
// returns its release: one fill at a time of a cache that several
// processes share (the jar cache, npm installs, the FerretDB build of
// db/mongodb).
func LockFile(ctx context.Context, path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("wait for the jar fetch lock %s: %w", path, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// Classpath joins every jar in dir (sorted, as os.ReadDir returns them).
func Classpath(dir string) (string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return "", fmt.Errorf("classpath: %w", err)
	}
	var jars []string
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".jar") {
			jars = append(jars, filepath.Join(dir, e.Name()))
		}
	}
	if len(jars) == 0 {
		return "", fmt.Errorf("classpath: no jars in %s", dir)
	}
	return strings.Join(jars, string(os.PathListSeparator)), nil
}

// JVMTempDir is the -D flag that gives a server JVM a temporary directory
// of its own inside dir (the node's data directory), made here: Java
// writes its scratch files to java.io.tmpdir, /tmp by default — HBase's
// Jetty unpacks its web application there and Cassandra's LZ4 and
// Snappy unpack native libraries there — and a node killed by a fault
// test never removes them. Inside the node's directory they go when the
// cluster's directory does.
func JVMTempDir(dir string) (string, error) {
	tmp := filepath.Join(dir, "tmp")
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return "", fmt.Errorf("temporary directory for the JVM: %w", err)
	}
	return "-Djava.io.tmpdir=" + tmp, nil
}
