package all

import (
	"go/parser"
	"go/token"
	"os"
	"strconv"
	"testing"
)

// TestLinksEveryFolder: all.go imports every folder of db/ but all/
// itself and internal/ (what the folders share, linked through them). A folder left out would have neither its adapter nor its engine
// in the binary, and no other test would notice: TestEngineDescriptions
// and the adapters' registry tests see only what is linked.
func TestLinksEveryFolder(t *testing.T) {
	t.Parallel()
	f, err := parser.ParseFile(token.NewFileSet(), "all.go", nil, parser.ImportsOnly)
	if err != nil {
		t.Fatal(err)
	}
	imported := map[string]bool{}
	for _, im := range f.Imports {
		p, err := strconv.Unquote(im.Path.Value)
		if err != nil {
			t.Fatal(err)
		}
		imported[p] = true
	}
	entries, err := os.ReadDir("..")
	if err != nil {
		t.Fatal(err)
	}
	folders := 0
	for _, e := range entries {
		if !e.IsDir() || e.Name() == "all" || e.Name() == "internal" {
			continue
		}
		folders++
		if p := "github.com/fieldbench/fieldbench/db/" + e.Name(); !imported[p] {
			t.Errorf("db/%s is not linked: add _ %q to db/all/all.go", e.Name(), p)
		}
	}
	if folders == 0 {
		t.Error("no database folder found beside db/all")
	}
}
