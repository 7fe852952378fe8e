package merge

import (
	"bytes"
	"compress/zlib"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"sync"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/fieldbench/fieldbench/result"
)

// histSum adds encoded histograms exactly, as HdrHistogram's Merge does,
// but without a histogram per input: merging 16 shards × 600 s × every
// operation decoded and allocated a full counts array per interval (about
// 140 KB each), which took most of a merge's time. A histogram of
// fieldbench's standard geometry (result.NewHist) is decoded straight into
// one dense counts array: adding counts index by index is what Merge does
// between histograms of one geometry (each recorded value maps back to its
// own index). Anything else goes through the library's decoder and Merge.
type histSum struct {
	counts []int64
	top    int // counts above top are zero
	any    bool
	slow   *hdrhistogram.Histogram
	// scratch, reused
	raw, payload []byte
	br           bytes.Reader
	zr           io.ReadCloser
	out          []byte
	zbuf         bytes.Buffer
	zw           *zlib.Writer
}

// std is the standard geometry: its counts' length and the 40-byte header
// of its V2 encoding with the payload length (bytes 4-7) zeroed.
var std struct {
	once      sync.Once
	countsLen int
	header    [40]byte
	outer     [4]byte // the cookie before the compressed part
	ratio     float64
	err       error
}

func stdGeometry() error {
	std.once.Do(func() {
		h := result.NewHist()
		snap := h.Export()
		std.countsLen, std.ratio = len(snap.Counts), snap.IntegerToDoubleConversionRatio
		enc, err := result.EncodeHist(h)
		if err != nil {
			std.err = err
			return
		}
		var s histSum
		hdr, _, err := s.open(enc)
		if err != nil {
			std.err = fmt.Errorf("read the standard histogram header: %w", err)
			return
		}
		std.header = hdr
		binary.BigEndian.PutUint32(std.header[4:8], 0)
		copy(std.outer[:], s.raw[:4])
	})
	return std.err
}

// reset empties the sum for the next interval.
func (s *histSum) reset() {
	clear(s.counts[:s.top])
	s.top, s.any, s.slow = 0, false, nil
}

// open decodes the base64 and zlib wrapping of enc and reads its header,
// leaving the payload to read from s.zr.
func (s *histSum) open(enc string) (hdr [40]byte, payloadLen int, err error) {
	n := base64.StdEncoding.DecodedLen(len(enc))
	if cap(s.raw) < n {
		s.raw = make([]byte, n)
	}
	n, err = base64.StdEncoding.Decode(s.raw[:n], []byte(enc))
	if err != nil {
		return hdr, 0, err
	}
	raw := s.raw[:n]
	if len(raw) < 8 {
		return hdr, 0, errors.New("too short")
	}
	s.br.Reset(raw[8:])
	if s.zr == nil {
		if s.zr, err = zlib.NewReader(&s.br); err != nil {
			return hdr, 0, err
		}
	} else if err = s.zr.(zlib.Resetter).Reset(&s.br, nil); err != nil {
		return hdr, 0, err
	}
	if _, err = io.ReadFull(s.zr, hdr[:]); err != nil {
		return hdr, 0, err
	}
	return hdr, int(int32(binary.BigEndian.Uint32(hdr[4:8]))), nil
}

// add adds the histogram encoded as enc ("" is empty).
func (s *histSum) add(enc string) error {
	if enc == "" {
		return nil
	}
	if err := stdGeometry(); err != nil {
		return err
	}
	if s.counts == nil {
		s.counts = make([]int64, std.countsLen)
	}
	hdr, plen, err := s.open(enc)
	if err == nil {
		binary.BigEndian.PutUint32(hdr[4:8], 0)
		if hdr == std.header && plen >= 0 && plen <= 9*std.countsLen {
			if err = s.addPayload(plen); err == nil {
				s.any = true
				return nil
			}
		}
	}
	// Another geometry (or a payload this reader refuses): the library's
	// decoder decides, and its Merge adds.
	h, derr := result.DecodeHist(enc)
	if derr != nil {
		return derr
	}
	if s.slow == nil {
		s.slow = result.NewHist()
	}
	s.slow.Merge(h)
	s.any = true
	return nil
}

// addPayload reads a V2 payload of plen bytes (ZigZag LEB128 varints:
// counts, and negative runs of zeros) and adds it to the counts. A payload
// it refuses leaves the counts untouched.
func (s *histSum) addPayload(plen int) error {
	if cap(s.payload) < plen+1 {
		s.payload = make([]byte, plen+1)
	}
	p := s.payload[:plen+1]
	n, err := io.ReadFull(s.zr, p)
	if n != plen || err != io.ErrUnexpectedEOF && !(plen == 0 && err == io.EOF) {
		return fmt.Errorf("payload of %d bytes, %d read: %v", plen, n, err)
	}
	p = p[:plen]
	// Check everything first, then add: never half a histogram.
	for pass := 0; pass < 2; pass++ {
		idx := 0
		for pos := 0; pos < len(p); {
			v, k, err := zigzag(p[pos:])
			if err != nil {
				return err
			}
			pos += k
			switch {
			case v < 0:
				if v == math.MinInt64 || -v > int64(len(s.counts)-idx) {
					return errors.New("zero run past the counts")
				}
				idx += int(-v)
			case idx >= len(s.counts):
				return errors.New("count past the counts")
			default:
				if pass == 0 {
					if v > math.MaxInt64-s.counts[idx] {
						return errors.New("counts sum past MaxInt64")
					}
				} else {
					s.counts[idx] += v
					if v != 0 && idx >= s.top {
						s.top = idx + 1
					}
				}
				idx++
			}
		}
	}
	return nil
}

// zigzag reads one ZigZag LEB128-64b9B varint (HdrHistogram's V2 payload).
func zigzag(b []byte) (int64, int, error) {
	var u uint64
	for i := range 8 {
		if i >= len(b) {
			return 0, 0, errors.New("truncated varint")
		}
		u |= uint64(b[i]&0x7f) << (7 * i)
		if b[i]&0x80 == 0 {
			return int64(u>>1) ^ -int64(u&1), i + 1, nil
		}
	}
	if len(b) < 9 {
		return 0, 0, errors.New("truncated varint")
	}
	u |= uint64(b[8]) << 56
	return int64(u>>1) ^ -int64(u&1), 9, nil
}

// encode writes the sum as EncodeHist writes the histogram it is: the V2
// payload of the counts up to the highest non-zero one (at least one),
// runs of two or more zeros as one negative varint, compressed by zlib at
// its best compression behind the standard header, in base64. The
// library's Encode allocates a new compressor (about 1 MB) per histogram;
// this one is reused.
func (s *histSum) encode() (string, error) {
	if err := stdGeometry(); err != nil {
		return "", err
	}
	if s.slow != nil || s.counts == nil {
		return result.EncodeHist(s.hist())
	}
	limit := max(s.top, 1)
	p := s.out[:0]
	for i := 0; i < limit; {
		c := s.counts[i]
		i++
		if c == 0 {
			z := int64(1)
			for i < limit && s.counts[i] == 0 {
				z++
				i++
			}
			if z > 1 {
				p = appendZigzag(p, -z)
				continue
			}
		}
		p = appendZigzag(p, c)
	}
	s.out = p
	hdr := std.header
	binary.BigEndian.PutUint32(hdr[4:8], uint32(len(p)))
	s.zbuf.Reset()
	s.zbuf.Write(std.outer[:])
	s.zbuf.Write([]byte{0, 0, 0, 0}) // the compressed length, below
	if s.zw == nil {
		w, err := zlib.NewWriterLevel(&s.zbuf, zlib.BestCompression)
		if err != nil {
			return "", err
		}
		s.zw = w
	} else {
		s.zw.Reset(&s.zbuf)
	}
	s.zw.Write(hdr[:])
	s.zw.Write(p)
	if err := s.zw.Close(); err != nil {
		return "", err
	}
	raw := s.zbuf.Bytes()
	binary.BigEndian.PutUint32(raw[4:8], uint32(len(raw)-8))
	return base64.StdEncoding.EncodeToString(raw), nil
}

// appendZigzag appends v as a ZigZag LEB128-64b9B varint.
func appendZigzag(b []byte, v int64) []byte {
	u := uint64(v<<1) ^ uint64(v>>63)
	for i := 0; i < 8; i++ {
		if u>>7 == 0 {
			return append(b, byte(u))
		}
		b = append(b, byte(u&0x7f)|0x80)
		u >>= 7
	}
	return append(b, byte(u))
}

// addSum adds the sum o into s.
func (s *histSum) addSum(o *histSum) {
	if o.top > 0 {
		if s.counts == nil {
			s.counts = make([]int64, len(o.counts))
		}
		for i, c := range o.counts[:o.top] {
			s.counts[i] += c
		}
		s.top = max(s.top, o.top)
	}
	if o.slow != nil {
		if s.slow == nil {
			s.slow = result.NewHist()
		}
		s.slow.Merge(o.slow)
	}
	s.any = s.any || o.any
}

// hist is the sum as a histogram of the standard geometry.
func (s *histSum) hist() *hdrhistogram.Histogram {
	var h *hdrhistogram.Histogram
	if s.top == 0 {
		h = result.NewHist()
	} else {
		h = hdrhistogram.Import(&hdrhistogram.Snapshot{
			LowestTrackableValue: result.LowestUS, HighestTrackableValue: result.HighestUS,
			SignificantFigures: result.SigFigs, Counts: s.counts, IntegerToDoubleConversionRatio: std.ratio,
		})
	}
	if s.slow != nil {
		h.Merge(s.slow)
	}
	return h
}
