package cli

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"

	"github.com/fieldbench/fieldbench/adapter"
	"github.com/fieldbench/fieldbench/job"
)

// newRunDir creates results/<time>-<workload>-<adapter>[-N]/ and proves it
// writable before any work starts, so a bad --results fails at once.
func newRunDir(results, workloadName, adapterName string, now time.Time) (string, error) {
	if err := os.MkdirAll(results, 0o755); err != nil {
		return "", usagef("results directory %s is not writable: %v", results, err)
	}
	base := fmt.Sprintf("%s-%s-%s", now.Format("20060102-150405"), workloadName, adapterName)
	for i := 1; i < 1000; i++ {
		name := base
		if i > 1 {
			name = fmt.Sprintf("%s-%d", base, i)
		}
		dir := filepath.Join(results, name)
		err := os.Mkdir(dir, 0o755)
		if err == nil {
			abs, aerr := filepath.Abs(dir)
			if aerr != nil {
				return dir, nil
			}
			return abs, nil
		}
		if !os.IsExist(err) {
			return "", usagef("results directory %s is not writable: %v", results, err)
		}
	}
	return "", fmt.Errorf("could not find a free run directory name under %s", results)
}

func newRand(seed int64) *rand.Rand { return rand.New(rand.NewPCG(uint64(seed), 0)) }

// runDirFor creates the run directory, named for the adapter of dsn, and
// returns the DSN to use: dsn itself, or the embedded default — a SQLite file
// named dbName inside the run directory — when dsn is empty.
func runDirFor(results, dirName, dbName, dsn string) (dir, useDSN string, err error) {
	adapterName := "sqlite"
	if dsn != "" {
		a, err := adapter.ForDSN(dsn)
		if err != nil {
			return "", "", job.Usage(err)
		}
		adapterName = a.Name()
	}
	if dir, err = newRunDir(results, dirName, adapterName, time.Now()); err != nil {
		return "", "", err
	}
	if dsn == "" {
		dsn = defaultSQLite(dir, dbName)
	}
	return dir, dsn, nil
}
