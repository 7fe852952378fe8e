package ingest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"regexp"
	"testing"
)

func TestFieldsAreTheStudysRecord(t *testing.T) {
	t.Parallel()
	wantTypes := []string{"string", "int", "int", "int", "date", "string", "int", "double", "date"}
	wantBytes := []int{36, 4, 4, 4, 8, 50, 4, 8, 8}
	if len(Fields) != 9 {
		t.Fatalf("%d fields, the study's record has 9", len(Fields))
	}
	sum := 0
	for i, f := range Fields {
		if f.Type != wantTypes[i] || f.Bytes != wantBytes[i] {
			t.Errorf("field %d %s: %s(%d), want %s(%d)", i+1, f.Name, f.Type, f.Bytes, wantTypes[i], wantBytes[i])
		}
		sum += f.Bytes
	}
	if sum != RecordBytes || RecordBytes != 126 {
		t.Fatalf("fields add up to %d bytes, RecordBytes is %d, the study says 126", sum, RecordBytes)
	}
}

var uuidLike = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
var tagLike = regexp.MustCompile(`^src[0-9]{2}/ch[0-9]{2}/[a-z0-9]{39}$`)

func TestRecordIs126Bytes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		seed   int64
		source int
		seq    int64
	}{
		{1, 0, 0}, {1, 7, 329_999}, {42, 3, 17}, {-5, 99, 1 << 20}, {0, 0, MaxRecords - 1},
	} {
		r := Generate(tc.seed, tc.source, tc.seq)
		if got := r.StudyBytes(); got != RecordBytes {
			t.Errorf("%+v: %d bytes by the study's accounting, want %d", tc, got, RecordBytes)
		}
		if got := len(r.AppendBinary(nil)); got != RecordBytes {
			t.Errorf("%+v: binary encoding has %d bytes, want %d", tc, got, RecordBytes)
		}
		if !uuidLike.MatchString(r.ID) {
			t.Errorf("%+v: id %q is not UUID-like", tc, r.ID)
		}
		if !tagLike.MatchString(r.Tag) {
			t.Errorf("%+v: tag %q is not 50 characters of the expected shape", tc, r.Tag)
		}
		if r.Source != int32(tc.source) || int64(r.Seq) != tc.seq || r.Channel < 0 || r.Channel > 63 ||
			r.Value < 225 || r.Value > 235 || r.Quality < 0 || r.Quality > 3 ||
			!r.RecordedAt.After(r.MeasuredAt) || r.MeasuredAt.Before(Epoch) {
			t.Errorf("%+v: implausible record %+v", tc, r)
		}
	}
}

func TestRecordDeterministic(t *testing.T) {
	t.Parallel()
	a := Generate(7, 3, 1234)
	if b := Generate(7, 3, 1234); a != b {
		t.Fatalf("same (seed, source, seq) gave %+v and %+v", a, b)
	}
	buf := make([]Record, 10)
	Fill(buf, 7, 3, 1230)
	if buf[4] != a {
		t.Fatalf("Fill differs from Generate: %+v vs %+v", buf[4], a)
	}
	for name, other := range map[string]Record{
		"seed":   Generate(8, 3, 1234),
		"source": Generate(7, 4, 1234),
		"seq":    Generate(7, 3, 1235),
	} {
		if other.ID == a.ID || other.Tag[9:] == a.Tag[9:] {
			t.Errorf("changing the %s did not change the record", name)
		}
	}
	// IDs are unique across a study-sized source set.
	seen := map[string]bool{}
	for s := range 8 {
		Fill(buf, 1, s, 0)
		for seq := int64(0); seq < 5000; seq += int64(len(buf)) {
			Fill(buf, 1, s, seq)
			for _, r := range buf {
				if seen[r.ID] {
					t.Fatalf("duplicate id %s", r.ID)
				}
				seen[r.ID] = true
			}
		}
	}
}

// TestRecordFingerprint pins the records of seed 1: any change to the
// generator changes what every published result inserted, so it must be
// deliberate (update the constants and say so in the change).
func TestRecordFingerprint(t *testing.T) {
	t.Parallel()
	h := sha256.New()
	var b []byte
	for s := range 8 {
		for seq := range int64(100) {
			b = Generate(1, s, seq).AppendBinary(b[:0])
			h.Write(b)
		}
	}
	got := hex.EncodeToString(h.Sum(nil))
	const want = "d3c18d88e5cdeb5183bf8fd126bf7975e4577d333bc35725e8da1b498cc417e5"
	if got != want {
		t.Errorf("fingerprint of seed 1, sources 0-7, records 0-99 = %s, want %s", got, want)
	}
	j, _ := json.Marshal(Generate(1, 0, 0))
	const wantFirst = `{"id":"e27addb6-c29b-4661-86da-506440fe0bd5","source":0,"seq":0,"channel":15,"measured_at":"2015-03-02T00:00:00.000281Z","tag":"src00/ch15/kepd1kbjtbf0i48nmym1pbfr4z2ljn6v4byede6","quality":0,"value":227.403,"recorded_at":"2015-03-02T00:00:00.083222Z"}`
	if string(j) != wantFirst {
		t.Errorf("first record of seed 1 = %s\nwant %s", j, wantFirst)
	}
}

func BenchmarkFill(b *testing.B) {
	buf := make([]Record, 1000)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		Fill(buf, 1, 0, int64(i)*1000)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(buf)), "ns/record")
}
