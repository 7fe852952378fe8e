package wiki

import (
	"bufio"
	"bytes"
	"compress/bzip2"
	"compress/gzip"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync/atomic"
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
	// MaxTokenBytes bounds the input one XML token (a text, a tag, a
	// comment) may span (default 2 x MaxPageBytes: a page's text of
	// MediaWiki's 2 MiB written with every character escaped fits eight
	// times over). The XML decoder keeps a token whole in memory, so
	// without it an input with no '<' (/dev/zero) or a tag that never
	// closes grew without end (issue 40); a longer token is an error.
	MaxTokenBytes int
}

// DefaultMaxPageBytes is 16 MiB, eight times MediaWiki's own page limit.
const DefaultMaxPageBytes = 16 << 20

// maxDepth bounds the nesting of elements (a pages-articles dump nests 5
// deep: mediawiki, page, revision, contributor, username), so an input of
// endless opening tags cannot grow the decoder's stack of names.
const maxDepth = 64

// maxTitleBytes bounds a page's title (MediaWiki's are at most 255 bytes).
const maxTitleBytes = 64 << 10

// defaultMaxTokenFactor is MaxTokenBytes' default over MaxPageBytes.
const defaultMaxTokenFactor = 2

// errTokenTooLong is the guard's refusal of a token past MaxTokenBytes.
var errTokenTooLong = errors.New("token too long")

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
	ctx    context.Context
	dec    *xml.Decoder
	guard  *tokenGuard
	closer io.Closer      // the file OpenDump opened
	ahead  *io.PipeReader // the reading (and decompressing) goroutine's pipe
	unhook func() bool    // stops the context's closing of ahead
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
	return OpenDumpContext(context.Background(), path, opt)
}

// OpenDumpContext is OpenDump whose reading stops when ctx ends: Next
// then returns ctx's error, at once, even from inside a read that waits
// for input (a pipe, a terminal).
func OpenDumpContext(ctx context.Context, path string, opt DumpOptions) (*Dump, error) {
	if path == "-" {
		return NewDumpContext(ctx, os.Stdin, "standard input", opt)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, dumpErr(path, err, "cannot open")
	}
	d, err := NewDumpContext(ctx, f, path, opt)
	if err != nil {
		f.Close()
		return nil, err
	}
	d.closer = f
	return d, nil
}

// NewDump reads a dump from r; name is used in error messages.
func NewDump(r io.Reader, name string, opt DumpOptions) (*Dump, error) {
	return NewDumpContext(context.Background(), r, name, opt)
}

// NewDumpContext is NewDump whose reading stops when ctx ends (see
// OpenDumpContext).
func NewDumpContext(ctx context.Context, r io.Reader, name string, opt DumpOptions) (*Dump, error) {
	if opt.MaxPageBytes <= 0 {
		opt.MaxPageBytes = DefaultMaxPageBytes
	}
	if opt.MaxTokenBytes <= 0 {
		opt.MaxTokenBytes = defaultMaxTokenFactor * opt.MaxPageBytes
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	br := bufio.NewReaderSize(r, 1<<20)
	head, err := br.Peek(4)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, dumpErr(name, err, "cannot read")
	}
	var in io.Reader = br
	switch {
	case len(head) == 0:
		return nil, dumpErr(name, nil, "the file is empty")
	case bytes.HasPrefix(head, magicBzip2):
		in = bzip2.NewReader(br)
	case bytes.HasPrefix(head, magicGzip):
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, dumpErr(name, err, "corrupt gzip data")
		}
		in = zr
	case bytes.HasPrefix(head, magic7z):
		return nil, dumpErr(name, nil, "a 7z archive, which fieldbench cannot read: give the .xml.bz2 dump, or decompress it (e.g. 7z e -so FILE | fieldbench load wiki --from -)")
	}
	// The input is read (and decompressed) on a goroutine of its own, so
	// that the end of ctx can end a read that waits for input: closing
	// the pipe returns the waiting Next at once.
	ahead := readAhead(in)
	unhook := context.AfterFunc(ctx, func() { ahead.CloseWithError(ctx.Err()) })
	g := &tokenGuard{r: ahead, limit: int64(opt.MaxTokenBytes)}
	d := &Dump{name: name, ctx: ctx, dec: xml.NewDecoder(bufio.NewReaderSize(g, 64<<10)), guard: g, ahead: ahead, unhook: unhook, opt: opt, nextID: 1}
	return d, nil
}

// tokenGuard counts the bytes the XML decoder reads and refuses to read
// more than limit past the end of the last token (mark): the decoder
// holds a token whole, so this bounds its memory whatever the input.
type tokenGuard struct {
	r     io.Reader
	limit int64
	read  atomic.Int64 // bytes read so far (BytesRead)
	mark  int64        // read at the end of the last token
}

func (g *tokenGuard) Read(p []byte) (int, error) {
	if g.read.Load()-g.mark > g.limit {
		return 0, errTokenTooLong
	}
	n, err := g.r.Read(p)
	g.read.Add(int64(n))
	return n, err
}

// tokenEnd marks the end of a token.
func (g *tokenGuard) tokenEnd() { g.mark = g.read.Load() }

// BytesRead is how much of the dump (decompressed) has been read, for
// progress: it may be read while another goroutine calls Next.
func (d *Dump) BytesRead() int64 { return d.guard.read.Load() }

// readAhead reads (and decompresses) r on its own goroutine, so reading
// (Go's bzip2 manages only ~5 MB/s) overlaps parsing and inserting
// instead of adding to them. Closing the result stops the goroutine after
// its current read.
func readAhead(r io.Reader) *io.PipeReader {
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
	if d.unhook != nil {
		d.unhook()
		d.unhook = nil
	}
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

// malformed wraps an error met while parsing, with the dump's name; the
// end of the context is returned as it is.
func (d *Dump) malformed(err error) error {
	if cerr := d.ctx.Err(); cerr != nil {
		return cerr
	}
	if errors.Is(err, errTokenTooLong) {
		return dumpErr(d.name, nil, "a single XML token (a text, a tag or a comment) runs past %d bytes at byte %d of the input: not a MediaWiki XML export (or a damaged one), whose page texts are at most %d bytes", d.opt.MaxTokenBytes, d.guard.mark, d.opt.MaxPageBytes)
	}
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
	d.guard.tokenEnd()
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
	if err := d.ctx.Err(); err != nil {
		return Article{}, err
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
				if err := d.skip(); err != nil { // siteinfo and the like
					return Article{}, err
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

// skip reads up to the end of the element just started, token by token
// (xml.Decoder.Skip would read them without the guard's marks) and no
// deeper than maxDepth.
func (d *Dump) skip() error {
	for depth := 1; depth > 0; {
		tok, err := d.token()
		if err != nil {
			return err
		}
		switch tok.(type) {
		case xml.StartElement:
			if depth++; depth > maxDepth {
				return d.tooDeep()
			}
		case xml.EndElement:
			depth--
		}
	}
	return nil
}

func (d *Dump) tooDeep() error {
	line, _ := d.dec.InputPos()
	return dumpErr(d.name, nil, "malformed: elements nest more than %d deep on line %d", maxDepth, line)
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
			if len(path)+2 > maxDepth { // below <mediawiki> and <page>
				return a, false, d.tooDeep()
			}
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
				if title.Len()+len(t) > maxTitleBytes {
					return a, false, dumpErr(d.name, nil, "the title of the page starting on line %d is over %d bytes", line, maxTitleBytes)
				}
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
