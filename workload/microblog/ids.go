package microblog

import (
	"crypto/rand"
	"encoding/binary"
	"sync/atomic"
	"time"
)

// Tweet ids of posts made by a run are unique across processes without a
// coordinator — several runs on one database, or the shards of one run on
// several machines — so a post never collides with another's (reading
// max(id) at start, as fieldbench once did, made two concurrent runs fail
// with UNIQUE violations on each other's ids). An id is
//
//	milliseconds since 2026-01-01 (39 bits) | source (14 bits) | sequence (10 bits)
//
// like Twitter's snowflake: roughly time-ordered, 1,024 ids per millisecond
// per source (more borrow the next millisecond), and always above the
// dataset's own ids 1..N. Shards use their index as the source, so they
// never collide; independent runs draw a random source, so two runs at once
// collide only if they draw the same one of 16,384 and then only on ids of
// the same millisecond and sequence.
const (
	idSeqBits    = 10
	idSourceBits = 14
	// MaxIDSource is the largest source number.
	MaxIDSource = 1<<idSourceBits - 1
)

var idEpoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// TweetIDs hands out ids for one source; safe for concurrent use.
type TweetIDs struct {
	source int64
	state  atomic.Int64 // ms << idSeqBits | seq of the last id
	now    func() time.Time
}

// NewTweetIDs returns the ids of source (0..MaxIDSource).
func NewTweetIDs(source int) *TweetIDs {
	return &TweetIDs{source: int64(source & MaxIDSource), now: time.Now}
}

// RandomIDSource draws a source for a run that is not a shard.
func RandomIDSource() int {
	var b [2]byte
	if _, err := rand.Read(b[:]); err != nil {
		return int(time.Now().UnixNano() & MaxIDSource)
	}
	return int(binary.BigEndian.Uint16(b[:]) & MaxIDSource)
}

// Next returns a new id.
func (g *TweetIDs) Next() int64 {
	for {
		old := g.state.Load()
		cand := max(g.now().Sub(idEpoch).Milliseconds()<<idSeqBits, old+1)
		if g.state.CompareAndSwap(old, cand) {
			ms, seq := cand>>idSeqBits, cand&(1<<idSeqBits-1)
			return ms<<(idSourceBits+idSeqBits) | g.source<<idSeqBits | seq
		}
	}
}

// IDSource is the source an id was made by.
func IDSource(id int64) int { return int(id >> idSeqBits & MaxIDSource) }
