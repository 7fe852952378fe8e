package mongodb

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/fieldbench/fieldbench/cluster"
)

// The mongodb engine starts FerretDB, a server that speaks the MongoDB
// wire protocol over a SQLite backend: MongoDB itself cannot be installed
// on these machines (no Debian package, no registry ships it). FerretDB is
// named as what it is everywhere: the cluster's Version, every node's
// status and the adapter's Info say FerretDB and its version, never
// MongoDB, and its figures say nothing about MongoDB's speed (its reads do
// not use secondary indexes). To measure a real MongoDB, point --db at it.
//
// FerretDB is built from source through the Go toolchain (the module
// proxy serves its module, not a binary) the first time it is needed, and
// cached outside the repository (FerretDBBinary); scripts/install-servers.sh
// runs that build so the first `cluster up mongodb` does not wait for it.
//
// One node only: FerretDB has no replication of its own (each instance
// would be a separate database), so --nodes must be 1. The node can be
// killed and restarted on its data (the durability audit's crash).
//
// With --network hosts (Options.Network) the node is a host of its own on
// the cluster's virtual network (package vnet): FerretDB runs inside its
// host's namespace (`ip netns exec`, which execs it: the PID is
// FerretDB's) and listens on its host's address only (198.18.0.1) on
// MongoDB's standard port 27017. Its backend is SQLite files under the
// node's directory, so nothing else listens. FerretDB needs no user of its
// own: it runs as the user fieldbench runs as, as on loopback. fieldbench's
// own clients (readiness, version, status) dial through the namespace.
// Down removes the network.
//
// Options (cluster up --opt key=value):
//
//	log-level=LEVEL   FerretDB's log level (DEBUG, INFO, WARN, ERROR;
//	                  default WARN)
func init() {
	cluster.Register(&cluster.KillableSingle{Single: cluster.Single{
		Engine: Name, Server: "FerretDB", NodeName: "ferretdb1", LogFile: "ferretdb.log", DataDir: "data", StandardPort: mongoPort,
		CheckInstall: checkMongo, Prepare: prepareMongo, Start: startFerretDB, Describe: describeMongo,
		Detail:       func(c *cluster.Cluster) map[string]string { return map[string]string{"backend": c.Options["backend"]} },
		Probe:        probeMongo,
		ParseOptions: func(o cluster.Options) error { _, err := parseMongoOpts(o); return err },
		External:     &mongoRemote,
	}})
}

const (
	// FerretDBVersion is the FerretDB release the engine builds.
	FerretDBVersion = "1.24.2"
	ferretDBModule  = "github.com/FerretDB/FerretDB"
	// mongoDatabase is the database the cluster's DSN names.
	mongoDatabase = "fieldbench"
	// mongoPort is MongoDB's standard port, the node's port on a host
	// of its own.
	mongoPort = 27017
)

// checkMongo is the engine's Check: a cached FerretDB binary, or the go
// command to build one.
func checkMongo() error {
	if p, err := ferretDBPath(); err == nil {
		if _, err := os.Stat(p); err == nil {
			return nil
		}
	}
	if _, err := exec.LookPath("go"); err != nil {
		return fmt.Errorf("FerretDB %s is not built yet and go is not in PATH to build it (scripts/install-servers.sh builds it): %w", FerretDBVersion, err)
	}
	return nil
}

// ferretDBCacheDir is where the FerretDB binary is kept:
// $FIELDBENCH_FERRETDB if set, else $XDG_CACHE_HOME/fieldbench/ferretdb,
// else ~/.cache/fieldbench/ferretdb.
func ferretDBCacheDir() (string, error) {
	if d := os.Getenv("FIELDBENCH_FERRETDB"); d != "" {
		return d, nil
	}
	if d := os.Getenv("XDG_CACHE_HOME"); d != "" {
		return filepath.Join(d, "fieldbench", "ferretdb"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("ferretdb cache: no home directory (set FIELDBENCH_FERRETDB): %w", err)
	}
	return filepath.Join(home, ".cache", "fieldbench", "ferretdb"), nil
}

func ferretDBPath() (string, error) {
	d, err := ferretDBCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(d, "ferretdb-v"+FerretDBVersion), nil
}

// FerretDBBinary returns the path of the FerretDB binary, building it on
// first use: `go mod download` of the module at FerretDBVersion, a
// writable copy of its source beside the binary, build/version/version.txt
// written (FerretDB's build panics at start without it; its own build
// generates it from git), `go build ./cmd/ferretdb`, and the copy removed.
// Nothing of FerretDB's code enters this repository. Concurrent callers,
// in this process or others, wait for one build under a file lock; the
// build takes a few minutes on two cores.
func FerretDBBinary(ctx context.Context) (string, error) {
	bin, err := ferretDBPath()
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	if _, err := exec.LookPath("go"); err != nil {
		return "", fmt.Errorf("build FerretDB: go is not in PATH: %w", err)
	}
	root := filepath.Dir(bin)
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", fmt.Errorf("build FerretDB: %w", err)
	}
	unlock, err := cluster.LockFile(ctx, filepath.Join(root, "build.lock"))
	if err != nil {
		return "", err
	}
	defer unlock()
	if _, err := os.Stat(bin); err == nil { // built while we waited
		return bin, nil
	}
	goCmd := func(dir string, args ...string) ([]byte, error) {
		cmd := exec.CommandContext(ctx, "go", args...)
		cmd.Dir = dir
		// GOWORK=off and -mod=mod: the module's own go.mod and go.sum
		// decide, whatever workspace or flags the caller has.
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod", "CGO_ENABLED=0")
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return nil, fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, cluster.Tail(stderr.String(), 2000))
		}
		return out, nil
	}
	out, err := goCmd(root, "mod", "download", "-json", ferretDBModule+"@v"+FerretDBVersion)
	if err != nil {
		return "", fmt.Errorf("build FerretDB: %w", err)
	}
	var mod struct{ Dir, Error string }
	if err := json.Unmarshal(out, &mod); err != nil || mod.Dir == "" {
		return "", fmt.Errorf("build FerretDB: go mod download gave no directory (%s): %v", mod.Error, err)
	}
	src := filepath.Join(root, "src-v"+FerretDBVersion)
	if err := os.RemoveAll(src); err != nil {
		return "", fmt.Errorf("build FerretDB: %w", err)
	}
	defer os.RemoveAll(src)
	if err := copyTree(mod.Dir, src); err != nil {
		return "", fmt.Errorf("build FerretDB: copy the module: %w", err)
	}
	if err := os.WriteFile(filepath.Join(src, "build", "version", "version.txt"), []byte("v"+FerretDBVersion+"\n"), 0o644); err != nil {
		return "", fmt.Errorf("build FerretDB: %w", err)
	}
	tmp := bin + ".tmp"
	if _, err := goCmd(src, "build", "-trimpath", "-buildvcs=false", "-o", tmp, "./cmd/ferretdb"); err != nil {
		return "", fmt.Errorf("build FerretDB: %w", err)
	}
	if err := os.Rename(tmp, bin); err != nil {
		return "", fmt.Errorf("build FerretDB: %w", err)
	}
	return bin, nil
}

// copyTree copies the regular files and directories under from to to,
// writable (the module cache is read-only).
func copyTree(from, to string) error {
	return filepath.WalkDir(from, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(from, p)
		if err != nil {
			return err
		}
		dst := filepath.Join(to, rel)
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, b, 0o644)
	})
}

func parseMongoOpts(o cluster.Options) (logLevel string, err error) {
	logLevel = "WARN"
	for k, v := range o.Extra {
		switch k {
		case "log-level":
			switch strings.ToUpper(v) {
			case "DEBUG", "INFO", "WARN", "ERROR":
				logLevel = strings.ToUpper(v)
			default:
				return "", fmt.Errorf("mongodb: option log-level=%q: want DEBUG, INFO, WARN or ERROR", v)
			}
		default:
			return "", fmt.Errorf("mongodb: unknown option %q (known: log-level)", k)
		}
	}
	if o.Nodes > 1 {
		return "", fmt.Errorf("mongodb: FerretDB has no replication, so the engine starts one node (got --nodes %d): %w", o.Nodes, cluster.ErrUnsupported)
	}
	return logLevel, nil
}

// prepareMongo reads the options and builds FerretDB if it is not built
// yet; the node keeps its SQLite files under dir/ferretdb1/data, and
// listens on MongoDB's port 27017 on hosts.
func prepareMongo(ctx context.Context, opts cluster.Options) (map[string]string, error) {
	logLevel, err := parseMongoOpts(opts)
	if err != nil {
		return nil, err
	}
	if _, err := FerretDBBinary(ctx); err != nil {
		return nil, err
	}
	return map[string]string{
		"server":    "FerretDB " + FerretDBVersion + " (a MongoDB wire-protocol server standing in for MongoDB)",
		"backend":   "sqlite",
		"log-level": logLevel,
		"telemetry": "disable",
	}, nil
}

// describeMongo names the cluster after the FerretDB that answers and
// gives the DSN of its database.
func describeMongo(ctx context.Context, _ *cluster.Cluster, n *cluster.Node) (version, dsn string, err error) {
	v, err := ferretDBVersionOf(ctx, n)
	if err != nil {
		return "", "", err
	}
	return "FerretDB " + v, fmt.Sprintf("mongodb://%s/%s", n.Addr(), mongoDatabase), nil
}

// startFerretDB starts n on its address, port and data and waits until it
// answers buildInfo; on a host, inside its namespace.
func startFerretDB(ctx context.Context, c *cluster.Cluster, n *cluster.Node) error {
	bin, err := FerretDBBinary(ctx)
	if err != nil {
		return err
	}
	argv := n.Command(bin,
		"--handler=sqlite",
		"--sqlite-url=file:"+n.DataDir+"/",
		"--state-dir="+filepath.Dir(n.DataDir),
		"--listen-addr="+n.Addr(),
		"--debug-addr=-",      // no HTTP listener
		"--telemetry=disable", // no network beyond loopback
		"--log-level="+c.Options["log-level"],
	)
	pid, err := cluster.Start(cluster.Proc{Path: argv[0], Args: argv[1:], Dir: filepath.Dir(n.DataDir), LogFile: n.LogFile, Cluster: c, Node: n})
	if err != nil {
		return err
	}
	n.PID, n.Stopped = pid, false
	wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if err := cluster.WaitDial(wctx, n.Dial, n.Addr(), pid, n.LogFile); err != nil {
		_ = cluster.Kill(pid)
		n.PID = 0
		return err
	}
	if _, err := ferretDBVersionOf(wctx, n); err != nil {
		_ = cluster.Kill(pid)
		n.PID = 0
		return err
	}
	return nil
}

// mongoClient connects to n directly (one server, no discovery); a node
// on a host is dialled from inside its host's namespace, the only place
// its address is reachable from.
func mongoClient(n *cluster.Node) (*mongo.Client, error) {
	o := options.Client().ApplyURI("mongodb://" + n.Addr() + "/?directConnection=true").
		SetServerSelectionTimeout(5 * time.Second).SetAppName("fieldbench-cluster")
	if n.Netns != "" {
		o.SetDialer(cluster.NodeDialer{Node: n})
	}
	return mongo.Connect(o)
}

func buildInfoOf(ctx context.Context, n *cluster.Node) (mongoBuildInfo, error) {
	cl, err := mongoClient(n)
	if err != nil {
		return mongoBuildInfo{}, err
	}
	defer cl.Disconnect(context.Background())
	var bi mongoBuildInfo
	err = cl.Database("admin").RunCommand(ctx, bson.D{{Key: "buildInfo", Value: 1}}).Decode(&bi)
	return bi, err
}

// ferretDBVersionOf asks n for buildInfo and checks that FerretDB answers.
func ferretDBVersionOf(ctx context.Context, n *cluster.Node) (string, error) {
	var bi mongoBuildInfo
	var err error
	for {
		if bi, err = buildInfoOf(ctx, n); err == nil || ctx.Err() != nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		return "", fmt.Errorf("mongodb: buildInfo of %s: %w", n.Addr(), err)
	}
	if bi.FerretDBVersion == "" {
		return "", fmt.Errorf("mongodb: the server on %s is not FerretDB (buildInfo has no ferretdbVersion)", n.Addr())
	}
	return strings.TrimPrefix(bi.FerretDBVersion, "v"), nil
}

// probeMongo is the engine's status of a running node: the server's name
// and version from buildInfo (FerretDB, and the MongoDB version it claims
// for compatibility) beside its backend.
func probeMongo(ctx context.Context, n *cluster.Node, detail map[string]string) error {
	bi, err := buildInfoOf(ctx, n)
	if err != nil {
		return err
	}
	detail["server"] = "FerretDB"
	if bi.FerretDBVersion == "" {
		detail["server"] = "not FerretDB"
	}
	detail["version"] = strings.TrimPrefix(bi.FerretDBVersion, "v")
	detail["mongodb_compat"] = bi.Version
	return nil
}
