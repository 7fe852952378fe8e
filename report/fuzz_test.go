package report

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/fieldbench/fieldbench/result"
)

// FuzzReport makes the HTML and terminal reports of any result file that
// reads (seeded with the real result files of testdata/families and one
// with extreme figures): a page or an error in bounded time, never a panic
// or a hang.
func FuzzReport(f *testing.F) {
	files, err := filepath.Glob("testdata/families/*.jsonl")
	if err != nil || len(files) == 0 {
		f.Fatalf("no result files to seed from: %v", err)
	}
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"kind":"header","header":{"workload":"ingest","adapter":"sqlite","started":"2026-01-01T00:00:00Z","series":{"s":{"title":"t","x_label":"x","y_label":"y","log_y":true}}}}
{"kind":"point","point":{"series":"s","x":-1e16,"y":-1e16}}
{"kind":"point","point":{"series":"s","x":1e300,"y":1e300,"sd":1e300,"n":3}}
{"kind":"point","point":{"series":"request_set","x":0,"y":5e-324}}
`))
	f.Fuzz(func(t *testing.T, b []byte) {
		run, err := result.Decode(bytes.NewReader(b))
		if err != nil {
			return
		}
		within(t, 60*time.Second, "report", func() {
			_ = HTML(io.Discard, []*result.Run{run})
			_ = Terminal(io.Discard, run)
		})
	})
}
