package wiki

import (
	"bufio"
	"bytes"
	"compress/bzip2"
	"compress/gzip"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// DumpOptions configures reading a MediaWiki XML dump.
type DumpOptions struct {
	// KeepRedirects loads redirect pages as articles too. By default they
	// are skipped: a redirect is a one-line pointer ("#REDIRECT [[X]]"), not
	// an article, and about half the pages of an English dump are redirects.
	KeepRedirects bool
	// MaxPageBytes bounds one page's text (default DefaultMaxPageBytes); a
	// longer page is an error, so a damaged dump cannot exhaust memory.
	MaxPageBytes int
}

// DefaultMaxPageBytes is 16 MiB, eight times MediaWiki's own page limit.
const DefaultMaxPageBytes = 16 << 20

// DumpError is any failure to read a dump: a file that is not a MediaWiki
// export, a malformed or truncated one, corrupt compression. It is bad
// input rather than a database failure, so callers can tell the two apart.
type DumpError struct {
	Name string // the dump's path, or "standard input"
	Msg  string // what is wrong, in words a user understands
	Err  error  // the underlying error, if any
}

func (e *DumpError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("dump %s: %s: %v", e.Name, e.Msg, e.Err)
	}
	return fmt.Sprintf("dump %s: %s", e.Name, e.Msg)
}

func (e *DumpError) Unwrap() error { return e.Err }

func dumpErr(name string, err error, format string, a ...any) error {
	return &DumpError{Name: name, Msg: fmt.Sprintf(format, a...), Err: err}
}

// Dump streams the pages of a MediaWiki XML export (pages-articles.xml,
// plain, bzip2- or gzip-compressed) as articles: one page at a time, so
// memory stays constant whatever the dump's size. Each page becomes one
// article with ids 1, 2, ... in dump order (the page's own id is not kept:
// the workload needs consecutive ids), its title, and the text of its last
// revision as body. Dump implements Source.
type Dump struct {
	name   string
	dec    *xml.Decoder
	closer io.Closer     // the file OpenDump opened
	ahead  io.ReadCloser // the decompressing goroutine's pipe, if any
	opt    DumpOptions

	started, ended bool
	nextID         int64
	// Pages counts every page read; Redirects the redirects skipped.
	Pages, Redirects int64
}

var (
	magicBzip2 = []byte("BZh")
	magicGzip  = []byte{0x1f, 0x8b}
	magic7z    = []byte{'7', 'z', 0xbc, 0xaf}
)

// OpenDump opens the dump at path ("-" reads standard input). The
// compression is recognised from the content, not the file name.
func OpenDump(path string, opt DumpOptions) (*Dump, error) {
	if path == "-" {
		return NewDump(os.Stdin, "standard input", opt)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, dumpErr(path, err, "cannot open")
	}
	d, err := NewDump(f, path, opt)
	if err != nil {
		f.Close()
		return nil, err
	}
	d.closer = f
	return d, nil
}

// NewDump reads a dump from r; name is used in error messages.
func NewDump(r io.Reader, name string, opt DumpOptions) (*Dump, error) {
	if opt.MaxPageBytes <= 0 {
		opt.MaxPageBytes = DefaultMaxPageBytes
	}
	br := bufio.NewReaderSize(r, 1<<20)
	head, err := br.Peek(4)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, dumpErr(name, err, "cannot read")
	}
	var in io.Reader = br
	var ahead io.ReadCloser
	switch {
	case len(head) == 0:
		return nil, dumpErr(name, nil, "the file is empty")
	case bytes.HasPrefix(head, magicBzip2):
		ahead = readAhead(bzip2.NewReader(br))
		in = bufio.NewReaderSize(ahead, 1<<20)
	case bytes.HasPrefix(head, magicGzip):
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, dumpErr(name, err, "corrupt gzip data")
		}
		ahead = readAhead(zr)
		in = bufio.NewReaderSize(ahead, 1<<20)
	case bytes.HasPrefix(head, magic7z):
		return nil, dumpErr(name, nil, "a 7z archive, which fieldbench cannot read: give the .xml.bz2 dump, or decompress it (e.g. 7z e -so FILE | fieldbench load wiki --from -)")
	}
	return &Dump{name: name, dec: xml.NewDecoder(in), ahead: ahead, opt: opt, nextID: 1}, nil
}

// readAhead decompresses r on its own goroutine, so decompression (Go's
// bzip2 manages only ~5 MB/s) overlaps parsing and inserting instead of
// adding to them. Closing the result stops the goroutine.
func readAhead(r io.Reader) io.ReadCloser {
	pr, pw := io.Pipe()
	go func() {
		buf := make([]byte, 1<<20)
		for {
			n, err := r.Read(buf)
			if n > 0 {
				if _, werr := pw.Write(buf[:n]); werr != nil {
					return // the reading side was closed
				}
			}
			if err != nil {
				pw.CloseWithError(err) // io.EOF reads as the end of input
				return
			}
		}
	}()
	return pr
}

// Close stops decompression and closes the file OpenDump opened.
func (d *Dump) Close() error {
	var err error
	if d.ahead != nil {
		err = d.ahead.Close()
		d.ahead = nil
	}
	if d.closer != nil {
		err = errors.Join(err, d.closer.Close())
		d.closer = nil
	}
	return err
}

// malformed wraps an error met while parsing, with the dump's name.
func (d *Dump) malformed(err error) error {
	var se *xml.SyntaxError
	if errors.As(err, &se) {
		if se.Msg == "unexpected EOF" {
			return dumpErr(d.name, nil, "malformed: the input ends on line %d before </mediawiki> (truncated download?)", se.Line)
		}
		return dumpErr(d.name, err, "malformed XML")
	}
	return dumpErr(d.name, err, "cannot read (corrupt compressed data?)")
}

// token is the next token; the end of input before </mediawiki> is an error.
func (d *Dump) token() (xml.Token, error) {
	tok, err := d.dec.Token()
	if errors.Is(err, io.EOF) {
		if !d.started {
			return nil, dumpErr(d.name, nil, "not a MediaWiki XML export: no <mediawiki> element")
		}
		return nil, dumpErr(d.name, nil, "malformed: the input ends before </mediawiki> (truncated download?)")
	}
	if err != nil {
		return nil, d.malformed(err)
	}
	return tok, nil
}

// Next implements Source: the next page as an article, io.EOF after the
// last one.
func (d *Dump) Next() (Article, error) {
	if d.ended {
		return Article{}, io.EOF
	}
	if !d.started {
		if err := d.findRoot(); err != nil {
			return Article{}, err
		}
	}
	for {
		tok, err := d.token()
		if err != nil {
			return Article{}, err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if t.Name.Local != "page" {
				if err := d.dec.Skip(); err != nil { // siteinfo and the like
					return Article{}, d.malformed(err)
				}
				continue
			}
			a, redirect, err := d.readPage()
			if err != nil {
				return Article{}, err
			}
			d.Pages++
			if redirect && !d.opt.KeepRedirects {
				d.Redirects++
				continue
			}
			a.ID = d.nextID
			d.nextID++
			return a, nil
		case xml.EndElement: // </mediawiki>: the decoder checked it matches
			d.ended = true
			return Article{}, io.EOF
		}
	}
}

func (d *Dump) findRoot() error {
	for {
		tok, err := d.token()
		if err != nil {
			return err
		}
		if t, ok := tok.(xml.StartElement); ok {
			if t.Name.Local != "mediawiki" {
				return dumpErr(d.name, nil, "not a MediaWiki XML export: the root element is <%s>, want <mediawiki>", t.Name.Local)
			}
			d.started = true
			return nil
		}
	}
}

// readPage reads a <page> up to its end tag. It keeps the title and the
// text of the last revision (pages-articles has one; a full-history dump
// has many), and tells whether the page is a redirect: it has a <redirect>
// element, or (in dumps older than that element) its text starts with
// #REDIRECT.
func (d *Dump) readPage() (a Article, redirect bool, err error) {
	var title, text bytes.Buffer
	var path []string // element names below <page>
	line, _ := d.dec.InputPos()
	for {
		tok, err := d.token()
		if err != nil {
			return a, false, err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			path = append(path, t.Name.Local)
			switch {
			case len(path) == 1 && t.Name.Local == "redirect":
				redirect = true
			case len(path) == 1 && t.Name.Local == "revision":
				text.Reset()
			}
		case xml.EndElement:
			if len(path) == 0 { // </page>
				a.Title = strings.TrimSpace(title.String())
				if a.Title == "" {
					return a, false, dumpErr(d.name, nil, "malformed: the page starting on line %d has no <title>", line)
				}
				a.Body = text.String()
				if !redirect {
					redirect = isRedirectText(a.Body)
				}
				return a, redirect, nil
			}
			path = path[:len(path)-1]
		case xml.CharData:
			switch {
			case len(path) == 1 && path[0] == "title":
				title.Write(t)
			case len(path) == 2 && path[0] == "revision" && path[1] == "text":
				if text.Len()+len(t) > d.opt.MaxPageBytes {
					return a, false, dumpErr(d.name, nil, "the text of the page starting on line %d is over %d bytes", line, d.opt.MaxPageBytes)
				}
				text.Write(t)
			}
		}
	}
}

func isRedirectText(s string) bool {
	s = strings.TrimLeft(s, " \t\r\n")
	return len(s) >= 9 && strings.EqualFold(s[:9], "#REDIRECT")
}
