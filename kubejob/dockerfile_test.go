package kubejob_test

import (
	"bufio"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestDockerfileBuildsStaticBinary runs the Dockerfile's build command, as
// written there, and checks that what it makes is a static executable: the
// image's base (distroless/static) has no C library, so a binary that asks
// for a dynamic loader or a shared library would not start in a pod. No
// container engine runs here to build the image itself (docs/shards.md).
func TestDockerfileBuildsStaticBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds fieldbench")
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(root, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var build string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if line, ok := strings.CutPrefix(sc.Text(), "RUN "); ok && strings.Contains(line, "go build") {
			build = line
		}
	}
	if build == "" {
		t.Fatal("the Dockerfile has no RUN ... go build line")
	}
	// CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /fieldbench ./cmd/fieldbench:
	// environment assignments first, then the command.
	words := shellWords(build)
	var env []string
	for len(words) > 0 && strings.Contains(words[0], "=") && !strings.HasPrefix(words[0], "-") {
		env, words = append(env, words[0]), words[1:]
	}
	args := words
	out := filepath.Join(t.TempDir(), "fieldbench")
	for i, a := range args {
		if a == "-o" && i+1 < len(args) {
			args[i+1] = out
		}
	}
	if len(args) < 2 || args[0] != "go" || args[1] != "build" || !slices.Contains(env, "CGO_ENABLED=0") {
		t.Fatalf("the Dockerfile's build is %q: want CGO_ENABLED=0 go build ...", build)
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), env...)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", build, err, b)
	}
	bin, err := elf.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer bin.Close()
	for _, p := range bin.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("%s asks for a dynamic loader (PT_INTERP)", out)
		}
	}
	if libs, err := bin.ImportedLibraries(); err != nil || len(libs) > 0 {
		t.Errorf("%s needs shared libraries %v (%v)", out, libs, err)
	}
	if v, err := exec.Command(out, "--version").CombinedOutput(); err != nil || !strings.Contains(string(v), "fieldbench") {
		t.Errorf("%s --version: %v\n%s", out, err, v)
	}
}

// shellWords splits a RUN line as sh would for the plain words and
// double-quoted parts it holds (no escapes, variables or single quotes:
// the test fails on a build line that needs them).
func shellWords(line string) []string {
	var out []string
	var w strings.Builder
	in, quoted := false, false
	for _, r := range line {
		switch {
		case r == '"':
			quoted, in = !quoted, true
		case (r == ' ' || r == '\t') && !quoted:
			if in {
				out, in = append(out, w.String()), false
				w.Reset()
			}
		default:
			w.WriteRune(r)
			in = true
		}
	}
	if in {
		out = append(out, w.String())
	}
	return out
}

func TestShellWords(t *testing.T) {
	got := strings.Join(shellWords(`CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /fieldbench  ./cmd/fieldbench`), "|")
	if want := `CGO_ENABLED=0|go|build|-trimpath|-ldflags=-s -w|-o|/fieldbench|./cmd/fieldbench`; got != want {
		t.Errorf("shellWords = %s, want %s", got, want)
	}
}
