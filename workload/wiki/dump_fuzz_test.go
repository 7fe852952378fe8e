package wiki

import (
	"bytes"
	"os"
	"testing"
)

// FuzzDump reads any bytes as a MediaWiki dump (seeded with the real
// sample dump, plain and bzip2): pages or an error, never a panic, and no
// page longer than the bound.
func FuzzDump(f *testing.F) {
	for _, p := range []string{"testdata/sample-pages-articles.xml", "testdata/sample-pages-articles.xml.bz2"} {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("<mediawiki><page><title>x</title><revision><text>#REDIRECT [[y]]</text></revision></page></mediawiki>"))
	f.Add([]byte("<mediawiki><page><title>x</title>"))
	const maxPage = 1 << 16
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := NewDump(bytes.NewReader(b), "fuzz", DumpOptions{MaxPageBytes: maxPage})
		if err != nil {
			return
		}
		defer d.Close()
		for range 10000 {
			a, err := d.Next()
			if err != nil { // io.EOF after the last page, or a malformed dump
				return
			}
			if len(a.Body) > maxPage {
				t.Fatalf("page of %d bytes past the %d bound", len(a.Body), maxPage)
			}
		}
	})
}
