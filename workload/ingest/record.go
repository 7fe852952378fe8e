package ingest

import (
	"encoding/binary"
	"math"
	"time"
)

// RecordBytes is the size of one record by the study's accounting (its
// Figure 2): 36 + 4 + 4 + 4 + 8 + 50 + 4 + 8 + 8.
const RecordBytes = 126

// Widths of the two fixed-width strings.
const (
	IDLen  = 36
	TagLen = 50
)

// MaxRecords is the most records one source can insert: Seq is a 4-byte int.
const MaxRecords = math.MaxInt32

// Field describes one column of the record as the study laid it out.
type Field struct {
	Name  string // column name used by adapters
	Type  string // the study's type: string, int, date, double
	Bytes int    // the study's size
}

// Fields is the study's record, in order. Adapters create their columns from
// it; the docs' table and the 126-byte test come from it too.
var Fields = []Field{
	{"id", "string", IDLen},
	{"source", "int", 4},
	{"seq", "int", 4},
	{"channel", "int", 4},
	{"measured_at", "date", 8},
	{"tag", "string", TagLen},
	{"quality", "int", 4},
	{"value", "double", 8},
	{"recorded_at", "date", 8},
}

// Record is one measurement of the enterprise system: an electrical
// component's sample with its metadata. Every field is a function of
// (seed, source, seq), so any record can be regenerated from its position
// alone and sources need no coordination. Times have microsecond precision,
// UTC.
type Record struct {
	ID         string    `json:"id"`          // 36 characters, UUID-like
	Source     int32     `json:"source"`      // the source that inserts it, from 0
	Seq        int32     `json:"seq"`         // its index within the source, from 0
	Channel    int32     `json:"channel"`     // measuring channel, 0..63
	MeasuredAt time.Time `json:"measured_at"` // when the sample was taken
	Tag        string    `json:"tag"`         // 50 characters: the component's tag
	Quality    int32     `json:"quality"`     // quality flags, 0 = good
	Value      float64   `json:"value"`       // the measurement, around 230 (volts)
	RecordedAt time.Time `json:"recorded_at"` // when the source gathered it
}

// Epoch is the time of seq 0; samples follow every SamplePeriod.
var Epoch = time.Date(2015, 3, 2, 0, 0, 0, 0, time.UTC)

// SamplePeriod is the time between a source's consecutive samples (50 Hz).
const SamplePeriod = 20 * time.Millisecond

// StudyBytes is the record's size by the study's accounting: the strings'
// lengths plus 4 bytes per int, 8 per date and double. Generated records
// always give RecordBytes.
func (r Record) StudyBytes() int {
	return len(r.ID) + 4 + 4 + 4 + 8 + len(r.Tag) + 4 + 8 + 8
}

// AppendBinary appends the record's fixed 126-byte encoding: the strings
// space-padded (or cut) to their widths, ints as 4-byte and dates (Unix
// microseconds) and the double as 8-byte little-endian. It makes the study's
// accounting concrete and is what the fingerprint test hashes.
func (r Record) AppendBinary(b []byte) []byte {
	b = appendFixed(b, r.ID, IDLen)
	b = binary.LittleEndian.AppendUint32(b, uint32(r.Source))
	b = binary.LittleEndian.AppendUint32(b, uint32(r.Seq))
	b = binary.LittleEndian.AppendUint32(b, uint32(r.Channel))
	b = binary.LittleEndian.AppendUint64(b, uint64(r.MeasuredAt.UnixMicro()))
	b = appendFixed(b, r.Tag, TagLen)
	b = binary.LittleEndian.AppendUint32(b, uint32(r.Quality))
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(r.Value))
	b = binary.LittleEndian.AppendUint64(b, uint64(r.RecordedAt.UnixMicro()))
	return b
}

func appendFixed(b []byte, s string, width int) []byte {
	if len(s) > width {
		s = s[:width]
	}
	b = append(b, s...)
	for i := len(s); i < width; i++ {
		b = append(b, ' ')
	}
	return b
}

// Generate returns record seq of source for seed.
func Generate(seed int64, source int, seq int64) Record {
	var r Record
	fill(&r, seed, source, seq)
	return r
}

// Fill overwrites dst with records first, first+1, ... of source, reusing
// dst's memory: a source refills one batch buffer for the whole run.
func Fill(dst []Record, seed int64, source int, first int64) {
	for i := range dst {
		fill(&dst[i], seed, source, first+int64(i))
	}
}

const (
	hexDigits = "0123456789abcdef"
	tagChars  = "abcdefghijklmnopqrstuvwxyz0123456789"
)

// fill derives every field from a splitmix64 stream keyed by (seed, source,
// seq): no shared generator, so sources run in parallel and any record can
// be regenerated alone.
func fill(r *Record, seed int64, source int, seq int64) {
	g := newSplitmix(seed, source, seq)

	// ID: 128 bits shaped as a version-4 UUID (8-4-4-4-12).
	hi, lo := g.next(), g.next()
	hi = hi&^(0xf<<12) | 0x4<<12 // version 4
	lo = lo&^(0x3<<62) | 0x2<<62 // variant 10
	// ID and tag share one string: one allocation per record, not two (the
	// record generation is most of an ingest client's CPU).
	var buf [IDLen + TagLen]byte
	id := buf[:IDLen]
	var raw [16]byte
	binary.BigEndian.PutUint64(raw[:8], hi)
	binary.BigEndian.PutUint64(raw[8:], lo)
	j := 0
	for i, c := range raw {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			id[j] = '-'
			j++
		}
		id[j], id[j+1] = hexDigits[c>>4], hexDigits[c&0xf]
		j += 2
	}

	r.Source = int32(source)
	r.Seq = int32(seq)
	x := g.next()
	r.Channel = int32(x & 63)

	// Sampled every 20 ms with up to 1 ms jitter; gathered 5 to 205 ms later.
	jitter := time.Duration(x>>6%1000) * time.Microsecond
	r.MeasuredAt = Epoch.Add(time.Duration(seq)*SamplePeriod + jitter)
	r.RecordedAt = r.MeasuredAt.Add(5*time.Millisecond + time.Duration(x>>16%200_000)*time.Microsecond)

	// Tag: a readable prefix naming source and channel, then random
	// characters to exactly 50.
	tag := buf[IDLen:]
	n := copy(tag, "src")
	tag[n], tag[n+1] = '0'+byte(source/10%10), '0'+byte(source%10)
	n += 2
	n += copy(tag[n:], "/ch")
	tag[n], tag[n+1] = '0'+byte(r.Channel/10), '0'+byte(r.Channel%10)
	n += 2
	tag[n] = '/'
	n++
	for ; n < TagLen; n += 8 {
		v := g.next()
		for k := 0; k < 8 && n+k < TagLen; k++ {
			tag[n+k] = tagChars[v%uint64(len(tagChars))]
			v >>= 8
		}
	}
	both := string(buf[:])
	r.ID, r.Tag = both[:IDLen], both[IDLen:]

	q := g.next()
	if q%100 < 97 {
		r.Quality = 0
	} else {
		r.Quality = int32(1 + q>>8%3)
	}
	// 230 V ± 5 V, uniform, rounded to millivolts.
	u := float64(g.next()>>11) / (1 << 53)
	r.Value = math.Round((225+10*u)*1000) / 1000
}

// splitmix is the splitmix64 generator: a counter through a strong mixer.
type splitmix uint64

func newSplitmix(seed int64, source int, seq int64) splitmix {
	s := mix64(uint64(seed) ^ 0x6a09e667f3bcc909)
	s = mix64(s ^ uint64(source)*0x9e3779b97f4a7c15)
	s = mix64(s ^ uint64(seq))
	return splitmix(s)
}

func (s *splitmix) next() uint64 {
	*s += 0x9e3779b97f4a7c15
	return mix64(uint64(*s))
}

func mix64(z uint64) uint64 {
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}
