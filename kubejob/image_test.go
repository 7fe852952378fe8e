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
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
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

	t.Run("job", func(t *testing.T) { runJobPods(t, engine, conf, tag) })

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

// runJobPods runs the pods of the Indexed Job that `kube job` prints, as
// containers of the image, setting what Kubernetes sets: the container's
// args from the manifest with $(VAR) expanded from its environment (the
// kubelet's rule), JOB_COMPLETION_INDEX, the Secret's key as FIELDBENCH_DB
// (a podman secret), the results volume shared by the shards, the volume
// group-writable for fsGroup 65532, the CPU and memory limits, RestartPolicy
// Never. The shards start
// together (--start-at) on a Redis on loopback, and the image's own
// `merge` makes one result of them whose counts are the shards' sums.
func runJobPods(t *testing.T, engine, conf, tag string) {
	if engine != "podman" {
		t.Skip("the secret as an environment variable is set with podman secret")
	}
	const shards = 2
	_, c := adaptertest.OwnCluster(t, "redis", cluster.Options{Nodes: 1}, 5*time.Minute)
	startAt := time.Now().Add(30 * time.Second).UTC().Format(time.RFC3339)
	manifest, err := engineCmd(engine, conf, "run", "--rm", "--network", "none", tag,
		"kube", "job", "microblog", "--shards", fmt.Sprint(shards), "--image", tag, "--secret", "fbdb/dsn",
		"--results-claim", "fb-results", "--start-at", startAt,
		"--", "--users", "50", "--clients", "4", "--duration", "3s").Output()
	if err != nil {
		t.Fatalf("kube job: %v", err)
	}
	var job batchv1.Job
	if err := yaml.Unmarshal(manifest, &job); err != nil {
		t.Fatalf("the manifest: %v\n%s", err, manifest)
	}
	pod := job.Spec.Template.Spec
	if len(pod.Containers) != 1 || pod.RestartPolicy != corev1.RestartPolicyNever || pod.SecurityContext == nil || pod.SecurityContext.FSGroup == nil {
		t.Fatalf("a pod template this test does not know how to run: %+v", pod)
	}
	ctr := pod.Containers[0]
	if ctr.Image != tag || len(ctr.Env) != 1 || ctr.Env[0].ValueFrom == nil || ctr.Env[0].ValueFrom.SecretKeyRef == nil || len(ctr.VolumeMounts) != 1 {
		t.Fatalf("a container this test does not know how to run: %+v", ctr)
	}
	// The Secret, as a podman secret read into the variable the manifest
	// names.
	secret := fmt.Sprintf("fieldbench-test-%d", os.Getpid())
	mk := engineCmd(engine, conf, "secret", "create", secret, "-")
	mk.Stdin = strings.NewReader(c.DSN)
	if out, err := mk.CombinedOutput(); err != nil {
		t.Fatalf("podman secret create: %v\n%s", err, out)
	}
	t.Cleanup(func() { _ = engineCmd(engine, conf, "secret", "rm", secret).Run() })
	env := map[string]string{ctr.Env[0].Name: c.DSN}
	// The claim: one directory every shard mounts, writable for fsGroup.
	results := t.TempDir()
	if err := os.Chown(results, 0, int(*pod.SecurityContext.FSGroup)); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(results, 0o2775); err != nil {
		t.Fatal(err)
	}
	names := make([]string, shards)
	for i := range shards {
		names[i] = fmt.Sprintf("fieldbench-test-%d-%d", os.Getpid(), i)
		args := []string{"run", "-d", "--name", names[i], "--network", "host",
			"--secret", secret + ",type=env,target=" + ctr.Env[0].Name,
			"--env", fmt.Sprintf("JOB_COMPLETION_INDEX=%d", i),
			"-v", results + ":" + ctr.VolumeMounts[0].MountPath,
			"--group-add", fmt.Sprint(*pod.SecurityContext.FSGroup)}
		// The limits as cgroup limits (requests equal them in the manifest).
		if q, ok := ctr.Resources.Limits[corev1.ResourceCPU]; ok {
			args = append(args, "--cpus", fmt.Sprint(q.AsApproximateFloat64()))
		}
		if q, ok := ctr.Resources.Limits[corev1.ResourceMemory]; ok {
			args = append(args, "--memory", fmt.Sprint(q.Value()))
		}
		args = append(args, ctr.Image)
		for _, a := range ctr.Args {
			args = append(args, expandKubelet(a, env))
		}
		if out, err := engineCmd(engine, conf, args...).CombinedOutput(); err != nil {
			t.Fatalf("shard %d: %v\n%s", i, err, out)
		}
		t.Cleanup(func() { _ = engineCmd(engine, conf, "rm", "-f", names[i]).Run() })
	}
	for i, n := range names {
		out, err := engineCmd(engine, conf, "wait", n).Output()
		if code := strings.TrimSpace(string(out)); err != nil || code != "0" {
			logs, _ := engineCmd(engine, conf, "logs", n).CombinedOutput()
			t.Fatalf("shard %d exited %q (%v):\n%s", i, code, err, logs)
		}
	}
	dirs, err := filepath.Glob(filepath.Join(results, "*-microblog-*"))
	if err != nil || len(dirs) != shards {
		t.Fatalf("want %d shard run directories, got %v %v", shards, dirs, err)
	}
	mergeArgs := []string{"run", "--rm", "--network", "none", "-v", results + ":/results", "--group-add", fmt.Sprint(*pod.SecurityContext.FSGroup), tag,
		"merge", "--results", "/results/merged"}
	var sum map[string]int64 = map[string]int64{}
	for _, d := range dirs {
		mergeArgs = append(mergeArgs, "/results/"+filepath.Base(d))
		r, err := result.Read(d)
		if err != nil {
			t.Fatal(err)
		}
		for op, o := range r.Summary.Ops {
			sum[op] += o.Count
		}
	}
	if out, err := engineCmd(engine, conf, mergeArgs...).CombinedOutput(); err != nil {
		t.Fatalf("merge in the image: %v\n%s", err, out)
	}
	merged := onlyRun(t, filepath.Join(results, "merged"))
	if sum["post"] == 0 {
		t.Fatalf("the shards posted nothing: %v", sum)
	}
	for op, n := range sum {
		if got := merged.Summary.Ops[op].Count; got != n {
			t.Errorf("merged %s count %d, the shards' sum %d", op, got, n)
		}
	}
}

// expandKubelet expands $(VAR) in a container argument from env, as the
// kubelet does ($$ is a literal $; an unknown reference stays as written).
func expandKubelet(arg string, env map[string]string) string {
	var b strings.Builder
	for i := 0; i < len(arg); i++ {
		if arg[i] == '$' && i+1 < len(arg) {
			if arg[i+1] == '$' {
				b.WriteByte('$')
				i++
				continue
			}
			if arg[i+1] == '(' {
				if end := strings.IndexByte(arg[i:], ')'); end > 0 {
					if v, ok := env[arg[i+2:i+end]]; ok {
						b.WriteString(v)
						i += end
						continue
					}
				}
			}
		}
		b.WriteByte(arg[i])
	}
	return b.String()
}

func TestExpandKubelet(t *testing.T) {
	env := map[string]string{"FIELDBENCH_DB": "redis://h:1"}
	for in, want := range map[string]string{
		"$(FIELDBENCH_DB)":       "redis://h:1",
		"--db=$(FIELDBENCH_DB)x": "--db=redis://h:1x",
		"$$(FIELDBENCH_DB)":      "$(FIELDBENCH_DB)",
		"$(UNKNOWN)":             "$(UNKNOWN)",
		"plain":                  "plain",
	} {
		if got := expandKubelet(in, env); got != want {
			t.Errorf("expandKubelet(%q) = %q, want %q", in, got, want)
		}
	}
}
