package kubejob_test

import (
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fieldbench/fieldbench/adapter/adaptertest"
	"github.com/fieldbench/fieldbench/cluster"
	"github.com/fieldbench/fieldbench/result"
)

// requireImage, when set (scripts/test.sh sets it once install-servers.sh
// has installed podman), makes a missing container engine fail the image
// test instead of skipping it: in CI the image must be built.
const requireImage = "FIELDBENCH_REQUIRE_IMAGE"

// TestImage builds the Dockerfile's image with scripts/build-image.sh, as a
// user would, and runs it as the Job's pods would: --version, list, a run
// on null:// writing its run directory into a mounted /results as the
// image's non-root user, and a run against a real Redis on this machine's
// loopback. The binary it holds must be static: the image's base is empty.
func TestImage(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the container image")
	}
	engine := containerEngine(t)
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(root, "scripts", "containers.conf")
	tag := fmt.Sprintf("localhost/fieldbench:test-%d", os.Getpid())
	ctxDir := t.TempDir()
	script := filepath.Join(root, "scripts", "build-image.sh")
	if out, err := exec.Command(script, "--context", ctxDir).CombinedOutput(); err != nil {
		t.Fatalf("build-image.sh --context: %v\n%s", err, out)
	}
	checkStatic(t, filepath.Join(ctxDir, "fieldbench"))
	if out, err := exec.Command(script, tag).CombinedOutput(); err != nil {
		t.Fatalf("build-image.sh %s: %v\n%s", tag, err, out)
	}
	t.Cleanup(func() { _ = engineCmd(engine, conf, "rmi", "-f", tag).Run() })

	run := func(t *testing.T, args ...string) string {
		t.Helper()
		out, err := engineCmd(engine, conf, append([]string{"run", "--rm"}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("%s run %s: %v\n%s", engine, strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	if out := run(t, "--network", "none", tag, "--version"); !strings.Contains(out, "fieldbench version") {
		t.Errorf("--version: %s", out)
	}
	if out := run(t, "--network", "none", tag, "list"); !strings.Contains(out, "microblog") || !strings.Contains(out, "redis") {
		t.Errorf("list names no microblog or no redis adapter:\n%s", out)
	}

	t.Run("null", func(t *testing.T) {
		results := writableDir(t)
		run(t, "--network", "none", "-v", results+":/results", tag,
			"run", "microblog", "--db", "null://", "--users", "50", "--duration", "2s", "--results", "/results")
		r := onlyRun(t, results)
		if r.Summary == nil || r.Summary.Ops["post"].Count == 0 {
			t.Fatalf("no posts in %s", r.Dir)
		}
		// Written by the image's user, not root: a pod with
		// runAsNonRoot writes its results the same way.
		st, err := os.Stat(filepath.Join(r.Dir, "result.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		if uid := st.Sys().(*syscall.Stat_t).Uid; uid != 65532 {
			t.Errorf("result.jsonl owned by uid %d, want 65532 (the image's non-root user)", uid)
		}
	})

	t.Run("redis", func(t *testing.T) {
		_, c := adaptertest.OwnCluster(t, "redis", cluster.Options{Nodes: 1}, 5*time.Minute)
		results := writableDir(t)
		// The host's network: the server listens on its loopback only.
		run(t, "--network", "host", "-v", results+":/results", tag,
			"run", "microblog", "--db", c.DSN, "--users", "50", "--clients", "4", "--duration", "2s", "--results", "/results")
		r := onlyRun(t, results)
		if !strings.EqualFold(r.Header.Database.Name, "redis") || r.Summary == nil || r.Summary.Ops["post"].Count == 0 {
			t.Errorf("run in the image on %s: database %q, summary %+v", c.DSN, r.Header.Database.Name, r.Summary)
		}
	})
}

// containerEngine is podman or docker, whichever runs here; without one
// the test is skipped, or fails where requireImage says one is installed.
func containerEngine(t *testing.T) string {
	t.Helper()
	for _, e := range []string{"podman", "docker"} {
		if _, err := exec.LookPath(e); err == nil {
			return e
		}
	}
	if os.Getenv(requireImage) != "" {
		t.Fatalf("%s is set but neither podman nor docker is installed", requireImage)
	}
	t.Skip("no container engine (scripts/install-servers.sh installs podman)")
	return ""
}

// engineCmd runs the container engine, podman with the project's
// configuration unless the user set their own.
func engineCmd(engine, conf string, args ...string) *exec.Cmd {
	cmd := exec.Command(engine, args...)
	if engine == "podman" && os.Getenv("CONTAINERS_CONF") == "" {
		cmd.Env = append(os.Environ(), "CONTAINERS_CONF="+conf)
	}
	return cmd
}

// writableDir is a temporary directory the image's non-root user can write.
func writableDir(t *testing.T) string {
	t.Helper()
	d := t.TempDir()
	if err := os.Chmod(d, 0o777); err != nil {
		t.Fatal(err)
	}
	return d
}

// onlyRun reads the one run directory under results.
func onlyRun(t *testing.T, results string) *result.Run {
	t.Helper()
	dirs, err := filepath.Glob(filepath.Join(results, "*"))
	if err != nil || len(dirs) != 1 {
		t.Fatalf("want one run directory in %s, got %v %v", results, dirs, err)
	}
	r, err := result.Read(dirs[0])
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// checkStatic fails unless bin is a static executable that runs: one that
// asks for a dynamic loader or a shared library would not start on the
// image's empty base.
func checkStatic(t *testing.T, bin string) {
	t.Helper()
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("%s asks for a dynamic loader (PT_INTERP)", bin)
		}
	}
	if libs, err := f.ImportedLibraries(); err != nil || len(libs) > 0 {
		t.Errorf("%s needs shared libraries %v (%v)", bin, libs, err)
	}
}
