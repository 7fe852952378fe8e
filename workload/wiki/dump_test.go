package wiki

import (
	"bytes"
	"compress/gzip"
	"encoding/xml"
	"errors"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// readAll reads every article of a dump.
func readAll(t *testing.T, d *Dump) ([]Article, error) {
	t.Helper()
	var out []Article
	for {
		a, err := d.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, a)
	}
}

const einsteinBody = "{{Infobox person | name = Albert Einstein}}\n'''Albert Einstein''' (14 March 1879 – 18 April 1955) was a [[physicist]] & philosopher.\nE = mc<sup>2</sup>."

// TestDumpSample reads the hand-made dump in testdata (plain and made with
// the bzip2 command, and gzip-compressed here) with and without redirects.
func TestDumpSample(t *testing.T) {
	t.Parallel()
	plain, err := os.ReadFile("testdata/sample-pages-articles.xml")
	if err != nil {
		t.Fatal(err)
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(plain)
	zw.Close()
	gzPath := t.TempDir() + "/sample.xml.gz"
	if err := os.WriteFile(gzPath, gz.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	articles := []string{"Albert Einstein", "Template:Infobox person", "Zürich", "Two revisions", "Empty page"}
	all := []string{"Albert Einstein", "Einstein", "Template:Infobox person", "Zürich", "Old redirect", "Two revisions", "Empty page"}
	for _, tc := range []struct {
		name, path string
		keep       bool
		titles     []string
	}{
		{"plain", "testdata/sample-pages-articles.xml", false, articles},
		{"bzip2", "testdata/sample-pages-articles.xml.bz2", false, articles},
		{"gzip", gzPath, false, articles},
		{"plain with redirects", "testdata/sample-pages-articles.xml", true, all},
		{"bzip2 with redirects", "testdata/sample-pages-articles.xml.bz2", true, all},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d, err := OpenDump(tc.path, DumpOptions{KeepRedirects: tc.keep})
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			got, err := readAll(t, d)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.titles) {
				t.Fatalf("%d articles, want %d: %+v", len(got), len(tc.titles), got)
			}
			bodies := map[string]string{}
			for i, a := range got {
				if a.ID != int64(i+1) || a.Title != tc.titles[i] {
					t.Errorf("article %d: id %d title %q, want id %d title %q", i, a.ID, a.Title, i+1, tc.titles[i])
				}
				bodies[a.Title] = a.Body
			}
			for title, want := range map[string]string{
				"Albert Einstein": einsteinBody,
				"Zürich":          "'''Zürich''' is the largest city in [[Switzerland]].\n\n== Geography ==\nIt lies at the north-western tip of [[Lake Zürich]] (Zürichsee).",
				"Two revisions":   "second <version>", // the last revision, CDATA decoded
				"Empty page":      "",
			} {
				if bodies[title] != want {
					t.Errorf("%s: body %q, want %q", title, bodies[title], want)
				}
			}
			if tc.keep && bodies["Einstein"] != "#REDIRECT [[Albert Einstein]]" {
				t.Errorf("kept redirect body %q", bodies["Einstein"])
			}
			wantRedirects := int64(2)
			if tc.keep {
				wantRedirects = 0
			}
			if d.Pages != 7 || d.Redirects != wantRedirects {
				t.Errorf("pages %d redirects skipped %d, want 7 and %d", d.Pages, d.Redirects, wantRedirects)
			}
			if _, err := d.Next(); !errors.Is(err, io.EOF) {
				t.Errorf("Next after the end: %v, want io.EOF", err)
			}
		})
	}
}

func TestDumpMalformed(t *testing.T) {
	t.Parallel()
	page := func(body string) string {
		return "<page><title>T</title><revision><text>" + body + "</text></revision></page>"
	}
	plain, err := os.ReadFile("testdata/sample-pages-articles.xml")
	if err != nil {
		t.Fatal(err)
	}
	compressed, err := os.ReadFile("testdata/sample-pages-articles.xml.bz2")
	if err != nil {
		t.Fatal(err)
	}
	corrupt := bytes.Clone(compressed)
	for i := 40; i < len(corrupt)-20; i += 7 {
		corrupt[i] ^= 0x5a
	}
	for _, tc := range []struct {
		name  string
		input []byte
		opt   DumpOptions
		want  string
		// ok is how many articles are read before the error.
		ok int
	}{
		{"empty file", nil, DumpOptions{}, "the file is empty", 0},
		{"not XML", []byte("id,title,body\n1,a,b\n"), DumpOptions{}, "no <mediawiki> element", 0},
		{"HTML", []byte("<html><body>404</body></html>"), DumpOptions{}, "root element is <html>", 0},
		{"truncated", plain[:len(plain)/2], DumpOptions{}, "", 1},
		{"unclosed tag", []byte("<mediawiki>" + page("a") + "<page><title>U</title></mediawiki>"), DumpOptions{}, "malformed XML", 1},
		{"no end tag", []byte("<mediawiki>" + page("a")), DumpOptions{}, "before </mediawiki>", 1},
		{"bad entity", []byte("<mediawiki>" + page("a &nbsp; b") + "</mediawiki>"), DumpOptions{}, "malformed XML", 0},
		{"page without title", []byte("<mediawiki><page><revision><text>x</text></revision></page></mediawiki>"), DumpOptions{}, "has no <title>", 0},
		{"page too large", []byte("<mediawiki>" + page("short") + page(strings.Repeat("x", 100)) + "</mediawiki>"), DumpOptions{MaxPageBytes: 50}, "over 50 bytes", 1},
		{"7z archive", []byte{'7', 'z', 0xbc, 0xaf, 0x27, 0x1c, 0, 4}, DumpOptions{}, "7z archive", 0},
		{"corrupt bzip2", corrupt, DumpOptions{}, "dump", 0},
		{"truncated bzip2", compressed[:len(compressed)/2], DumpOptions{}, "dump", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d, err := NewDump(bytes.NewReader(tc.input), "test.xml", tc.opt)
			var got []Article
			if err == nil {
				got, err = readAll(t, d)
			}
			if err == nil {
				t.Fatalf("no error; read %d articles", len(got))
			}
			var de *DumpError
			if !errors.As(err, &de) {
				t.Fatalf("error %v (%T) is not a *DumpError", err, err)
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "test.xml") {
				t.Errorf("error %q does not name the file and say %q", err, tc.want)
			}
			if tc.name != "corrupt bzip2" && tc.name != "truncated bzip2" && len(got) != tc.ok {
				t.Errorf("read %d articles before the error, want %d", len(got), tc.ok)
			}
		})
	}
}

func TestOpenDumpMissing(t *testing.T) {
	t.Parallel()
	_, err := OpenDump("testdata/no-such-dump.xml", DumpOptions{})
	var de *DumpError
	if !errors.As(err, &de) || !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("OpenDump of a missing file: %v", err)
	}
}

// BenchmarkDump parses a synthetic dump of 500 generated articles from
// memory, plain and bzip2-compressed (with the bzip2 command, when present).
func BenchmarkDump(b *testing.B) {
	g, _ := NewGenerator(1, 500)
	var x bytes.Buffer
	x.WriteString("<mediawiki>\n")
	for id := int64(1); id <= 500; id++ {
		a := g.Article(id)
		x.WriteString("<page><title>" + a.Title + "</title><ns>0</ns><revision><text xml:space=\"preserve\">")
		xml.EscapeText(&x, []byte(a.Body))
		x.WriteString("</text></revision></page>\n")
	}
	x.WriteString("</mediawiki>\n")
	inputs := map[string][]byte{"plain": x.Bytes()}
	cmd := exec.Command("bzip2", "-c")
	cmd.Stdin = bytes.NewReader(x.Bytes())
	if bz, err := cmd.Output(); err == nil {
		inputs["bzip2"] = bz
	}
	for _, name := range []string{"plain", "bzip2"} {
		in, ok := inputs[name]
		if !ok {
			continue
		}
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(x.Len()))
			for b.Loop() {
				d, err := NewDump(bytes.NewReader(in), name, DumpOptions{})
				if err != nil {
					b.Fatal(err)
				}
				n := 0
				for {
					_, err := d.Next()
					if errors.Is(err, io.EOF) {
						break
					}
					if err != nil {
						b.Fatal(err)
					}
					n++
				}
				d.Close()
				if n != 500 {
					b.Fatalf("%d articles", n)
				}
			}
		})
	}
}
