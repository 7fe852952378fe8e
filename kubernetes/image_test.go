package kubernetes_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"debug/elf"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fieldbench/fieldbench/cluster"
	"github.com/fieldbench/fieldbench/cluster/clustertest"
	"github.com/fieldbench/fieldbench/cluster/vnet"
	_ "github.com/fieldbench/fieldbench/db/postgres" // the postgres engine the image's TLS run is tried against
	_ "github.com/fieldbench/fieldbench/db/redis"    // the redis engine the image is tried against
	"github.com/fieldbench/fieldbench/probe"
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
// user would, and runs it as the Job's pods would: --version, list, a
// study's and an experiment's dry run from the built-in scenarios, a run
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
	// The image holds no scenarios/: the studies' scenarios are the
	// binary's built-in copies (issue 40, finding 9). The image's user is
	// not root, so it cannot hold the scenarios' node budgets: refused,
	// naming the way out, and run without them with --no-budgets.
	out, err := engineCmd(engine, conf, "run", "--rm", "--network", "none", tag, "study", "wiki", "--dry-run").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "--no-budgets") {
		t.Errorf("study wiki --dry-run in the image (no root, budgets): %v, want a refusal naming --no-budgets:\n%s", err, out)
	}
	if out := run(t, "--network", "none", tag, "study", "wiki", "--dry-run", "--no-budgets"); !strings.Contains(out, "[built in]") {
		t.Errorf("study wiki --dry-run --no-budgets in the image:\n%s", out)
	}
	if out := run(t, "--network", "none", tag, "experiment", "scenarios/microblog/crash.yaml", "--dry-run", "--no-budgets"); !strings.Contains(out, "scenario ") || strings.Contains(out, "budget:") {
		t.Errorf("experiment of a built-in scenario in the image, --no-budgets:\n%s", out)
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

	t.Run("job", func(t *testing.T) {
		_, c := clustertest.OwnCluster(t, "redis", cluster.Options{Nodes: 1}, 5*time.Minute)
		runJobPods(t, engine, conf, tag, jobPods{
			workload: "microblog", args: []string{"--users", "50", "--clients", "4", "--duration", "3s"},
			shards: 2, dsn: c.DSN,
			// The host's network: the server listens on its loopback only.
			network: func(int) string { return "host" },
		})
	})

	t.Run("hosts", func(t *testing.T) { runJobPodsOnHosts(t, engine, conf, tag) })

	t.Run("tls", func(t *testing.T) {
		// A PostgreSQL that speaks TLS only with a certificate of a CA
		// made here, and a DSN that verifies it (sslmode=verify-full
		// without sslrootcert: the driver uses the system's CA bundle,
		// which in the image is the one file the Dockerfile copies).
		ca, certs := tlsCerts(t)
		_, c := clustertest.OwnCluster(t, "postgres", cluster.Options{Nodes: 1, Extra: map[string]string{
			"ssl": "on", "ssl_cert_file": filepath.Join(certs, "server.crt"), "ssl_key_file": filepath.Join(certs, "server.key"),
		}}, 5*time.Minute)
		dsn := strings.Replace(c.DSN, "sslmode=disable", "sslmode=verify-full", 1)
		if dsn == c.DSN {
			t.Fatalf("no sslmode=disable to replace in %s", c.DSN)
		}
		args := []string{"run", "microblog", "--db", dsn, "--users", "50", "--clients", "4", "--duration", "2s", "--results", "/results"}
		// The image's own bundle does not know this CA: the run must
		// fail verification, which shows the certificate is checked.
		out, err := engineCmd(engine, conf, append([]string{"run", "--rm", "--network", "host", "-v", writableDir(t) + ":/results", tag}, args...)...).CombinedOutput()
		if err == nil || !strings.Contains(string(out), "certificate signed by unknown authority") {
			t.Fatalf("a run trusting only the image's CA bundle: err %v, want a certificate error:\n%s", err, out)
		}
		t.Logf("trusting only the image's bundle, as expected: %s", lastLine(out))
		// The CA in the bundle's place, as a cluster mounts its own CA
		// bundle over the image's.
		results := writableDir(t)
		run(t, append([]string{"--network", "host", "-v", ca + ":/etc/ssl/certs/ca-certificates.crt:ro", "-v", results + ":/results", tag}, args...)...)
		r := onlyRun(t, results)
		if r.Summary == nil || r.Summary.Ops["post"].Count == 0 {
			t.Fatalf("no posts over TLS in %s", r.Dir)
		}
	})

	t.Run("redis", func(t *testing.T) {
		_, c := clustertest.OwnCluster(t, "redis", cluster.Options{Nodes: 1}, 5*time.Minute)
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

// jobPods is one Indexed Job run as containers: the workload and its
// arguments as `kube job` takes them, the database's DSN (the Secret's
// key), and the network each shard's container joins.
type jobPods struct {
	workload string
	args     []string // the workload's arguments, after --
	shards   int
	dsn      string
	// network is podman's --network value for shard i; env, extra
	// environment for it.
	network func(i int) string
	env     func(i int) []string
}

// runJobPods runs the pods of the Indexed Job that `kube job` prints, as
// containers of the image, setting what Kubernetes sets: the container's
// args from the manifest with $(VAR) expanded from its environment (the
// kubelet's rule), JOB_COMPLETION_INDEX, the Secret's key as FIELDBENCH_DB
// (a podman secret), the results volume shared by the shards, the volume
// group-writable for fsGroup 65532, the CPU and memory limits, RestartPolicy
// Never. The shards start together (--start-at), and the image's own
// `merge` makes one result of them whose counts are the shards' sums,
// which it returns with the shards' results.
func runJobPods(t *testing.T, engine, conf, tag string, j jobPods) (*result.Run, []*result.Run) {
	t.Helper()
	if engine != "podman" {
		t.Skip("the secret as an environment variable is set with podman secret")
	}
	startAt := time.Now().Add(15 * time.Second).UTC().Format(time.RFC3339)
	kube := append([]string{}, "run", "--rm", "--network", "none", tag,
		"kube", "job", j.workload, "--shards", fmt.Sprint(j.shards), "--image", tag, "--secret", "fbdb/dsn",
		"--results-claim", "fb-results", "--start-at", startAt)
	manifest, err := engineCmd(engine, conf, append(append(kube, "--"), j.args...)...).Output()
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
	secret := fmt.Sprintf("fieldbench-test-%d-%s", os.Getpid(), j.workload)
	mk := engineCmd(engine, conf, "secret", "create", secret, "-")
	mk.Stdin = strings.NewReader(j.dsn)
	if out, err := mk.CombinedOutput(); err != nil {
		t.Fatalf("podman secret create: %v\n%s", err, out)
	}
	t.Cleanup(func() { _ = engineCmd(engine, conf, "secret", "rm", secret).Run() })
	env := map[string]string{ctr.Env[0].Name: j.dsn}
	// The claim: one directory every shard mounts, writable for fsGroup.
	results := t.TempDir()
	if err := os.Chown(results, 0, int(*pod.SecurityContext.FSGroup)); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(results, 0o2775); err != nil {
		t.Fatal(err)
	}
	names := make([]string, j.shards)
	for i := range j.shards {
		names[i] = fmt.Sprintf("fieldbench-test-%d-%s-%d", os.Getpid(), j.workload, i)
		args := []string{"run", "-d", "--name", names[i], "--network", j.network(i),
			"--secret", secret + ",type=env,target=" + ctr.Env[0].Name,
			"--env", fmt.Sprintf("JOB_COMPLETION_INDEX=%d", i),
			"-v", results + ":" + ctr.VolumeMounts[0].MountPath,
			"--group-add", fmt.Sprint(*pod.SecurityContext.FSGroup)}
		if j.env != nil {
			for _, e := range j.env(i) {
				args = append(args, "--env", e)
			}
		}
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
	dirs, err := filepath.Glob(filepath.Join(results, "*-"+j.workload+"-*"))
	if err != nil || len(dirs) != j.shards {
		t.Fatalf("want %d shard run directories, got %v %v", j.shards, dirs, err)
	}
	mergeArgs := []string{"run", "--rm", "--network", "none", "-v", results + ":/results", "--group-add", fmt.Sprint(*pod.SecurityContext.FSGroup), tag,
		"merge", "--results", "/results/merged"}
	sum := map[string]int64{}
	var shards []*result.Run
	for _, d := range dirs {
		mergeArgs = append(mergeArgs, "/results/"+filepath.Base(d))
		r, err := result.Read(d)
		if err != nil {
			t.Fatal(err)
		}
		if r.Summary == nil {
			t.Fatalf("shard %s has no summary", d)
		}
		shards = append(shards, r)
		for op, o := range r.Summary.Ops {
			sum[op] += o.Count
		}
	}
	if out, err := engineCmd(engine, conf, mergeArgs...).CombinedOutput(); err != nil {
		t.Fatalf("merge in the image: %v\n%s", err, out)
	}
	merged := onlyRun(t, filepath.Join(results, "merged"))
	if len(sum) == 0 {
		t.Fatalf("the shards did nothing: %v", sum)
	}
	for op, n := range sum {
		if n == 0 {
			t.Errorf("the shards did no %s", op)
		}
		if got := merged.Summary.Ops[op].Count; got != n {
			t.Errorf("merged %s count %d, the shards' sum %d", op, got, n)
		}
	}
	return merged, shards
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

// runJobPodsOnHosts runs the Job's pods as the studies ran their load
// machines: a Redis Cluster of three hosts on fieldbench's virtual network
// and each shard's container on a load host of its own (podman's --network
// ns: joins the host's namespace, as a pod has a network of its own). The
// microblog Job has two shards; the ingest Job has the ingest study's 5 + 3
// sources on two load hosts. Each shard's traffic must have gone through
// its load host's interface.
func runJobPodsOnHosts(t *testing.T, engine, conf, tag string) {
	if err := cluster.CheckNetwork("redis", cluster.NetworkHosts); err != nil {
		t.Skipf("a virtual network cannot be made here: %v", err)
	}
	_, c := clustertest.OwnCluster(t, "redis", cluster.Options{Nodes: 3, Network: cluster.NetworkHosts}, 5*time.Minute)
	vn := vnet.ForDir(c.Dir)
	ctx := context.Background()
	hosts := make([]vnet.Host, 2)
	for i := range hosts {
		h, err := vn.AddHost(ctx, fmt.Sprintf("load%d", i+1), vnet.LoadAddr(i+1))
		if err != nil {
			t.Fatal(err)
		}
		hosts[i] = h
		// Before the cluster's own clean-up (registered earlier, run
		// later), which removes the whole network anyway.
		t.Cleanup(func() { _ = vn.RemoveHost(context.Background(), h.Name) })
	}
	onHost := jobPods{
		shards:  len(hosts),
		dsn:     c.DSN,
		network: func(i int) string { return "ns:" + filepath.Join(vnet.Dir, hosts[i].NS) },
		// What `run --load-host` sets for the process it starts on a
		// load host: the result records where the shard ran.
		env: func(i int) []string { return []string{probe.LoadHostVar(hosts[i].Name, hosts[i].Addr, hosts[i].NS)} },
	}
	for _, tc := range []struct {
		name string
		job  func(j jobPods) jobPods
		op   string
	}{
		{"microblog", func(j jobPods) jobPods {
			j.workload, j.args = "microblog", []string{"--users", "50", "--clients", "4", "--duration", "3s"}
			return j
		}, "post"},
		{"ingest", func(j jobPods) jobPods {
			j.workload = "ingest"
			j.args = []string{"--sources", "8", "--records", "2000", "--batch", "100", "--split", "5,3"}
			return j
		}, "batch"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := make([]vnet.Counters, len(hosts))
			for i, h := range hosts {
				cs, err := vnet.HostCounters(ctx, h.NS)
				if err != nil {
					t.Fatal(err)
				}
				before[i] = cs
			}
			merged, shards := runJobPods(t, engine, conf, tag, tc.job(onHost))
			seen := map[string]bool{}
			for _, r := range shards {
				lh := r.Header.Machine.LoadHost
				if lh == nil {
					t.Fatalf("shard %s records no load host", r.Dir)
				}
				seen[lh.Name] = true
			}
			if len(seen) != len(hosts) {
				t.Errorf("the shards ran on load hosts %v, want one each of %d", seen, len(hosts))
			}
			for i, h := range hosts {
				cs, err := vnet.HostCounters(ctx, h.NS)
				if err != nil {
					t.Fatal(err)
				}
				// Tens of kB at the least: the shard's requests to the
				// cluster, which nothing else sends from this host.
				if sent := cs.TxBytes - before[i].TxBytes; sent < 10_000 {
					t.Errorf("load host %s sent %d bytes during the job: its shard's traffic did not go through it", h.Name, sent)
				}
			}
			if tc.name == "ingest" {
				// 5 + 3 sources of 2,000 records: every record once.
				var records int64
				for _, r := range shards {
					records += r.Summary.Ops[tc.op].Count
				}
				if want := int64(8 * 2000 / 100); records != want || merged.Summary.Ops[tc.op].Count != want {
					t.Errorf("batches: shards %d, merged %d, want %d", records, merged.Summary.Ops[tc.op].Count, want)
				}
			}
		})
	}
}

// tlsCerts makes a CA and a server certificate it signed for 127.0.0.1 and
// localhost, in a directory the postgres user can read (the key is that
// user's, mode 0600, as the server demands). It returns the CA's PEM file
// and the directory holding server.crt and server.key.
func tlsCerts(t *testing.T) (caFile, dir string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "fb-tls-*")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	newKey := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	now := time.Now()
	caKey := newKey()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "fieldbench test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	srvKey := newKey()
	srvTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "localhost"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	srvDER, err := x509.CreateCertificate(rand.Reader, srvTmpl, caCert, &srvKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(srvKey)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name, typ string, der []byte, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	caFile = write("ca.crt", "CERTIFICATE", caDER, 0o644)
	write("server.crt", "CERTIFICATE", srvDER, 0o644)
	key := write("server.key", "PRIVATE KEY", keyDER, 0o600)
	u, err := user.Lookup("postgres")
	if err != nil {
		t.Skipf("no postgres user (scripts/install-servers.sh makes it): %v", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if err := os.Chown(key, uid, gid); err != nil {
		t.Fatal(err)
	}
	return caFile, dir
}

// lastLine is the last non-empty line of out.
func lastLine(out []byte) string {
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return lines[len(lines)-1]
}
