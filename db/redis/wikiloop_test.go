package redis

import (
	"errors"
	"strings"
	"testing"

	"github.com/fieldbench/fieldbench/workload/wiki"
)

// TestMgetConnUpdate: the event loop's read and update on Redis, from
// replies whole and cut short at every byte (incomplete, never an error):
// an update's MGET keeps a copy of the body and its SET ... XX writes it
// back with "1" appended; the SET's nil is a missing article.
func TestMgetConnUpdate(t *testing.T) {
	// reply feeds r to c cut at every byte, then whole.
	reply := func(t *testing.T, c *mgetConn, r string) (error, error) {
		t.Helper()
		for cut := range len(r) {
			if n, opErr, err := c.Reply([]byte(r[:cut])); n != 0 || opErr != nil || err != nil {
				t.Fatalf("%q cut at %d: %d, %v, %v; want incomplete", r, cut, n, opErr, err)
			}
		}
		n, opErr, err := c.Reply([]byte(r))
		if err == nil && n != len(r) {
			t.Fatalf("%q: length %d", r, n)
		}
		return opErr, err
	}
	const found = "*2\r\n$5\r\ntitle\r\n$4\r\nbody\r\n"
	c := &mgetConn{}
	c.AppendRequest(nil, wiki.OpRead, 12)
	if opErr, err := reply(t, c, found); opErr != nil || err != nil {
		t.Fatalf("read: %v, %v", opErr, err)
	}
	if _, more := c.FollowUp(nil); more {
		t.Fatal("a read asked for a second request")
	}

	c.AppendRequest(nil, wiki.OpUpdate, 12)
	if opErr, err := reply(t, c, found); opErr != nil || err != nil {
		t.Fatalf("update's read: %v, %v", opErr, err)
	}
	req, more := c.FollowUp(nil)
	if want := "*4\r\n$3\r\nSET\r\n$11\r\nwiki:{12}:b\r\n$5\r\nbody1\r\n$2\r\nXX\r\n"; !more || string(req) != want {
		t.Fatalf("write-back %q, %v; want %q", req, more, want)
	}
	if opErr, err := reply(t, c, "+OK\r\n"); opErr != nil || err != nil {
		t.Fatalf("SET: %v, %v", opErr, err)
	}
	if _, more := c.FollowUp(nil); more {
		t.Fatal("an update asked for a third request")
	}

	for _, tt := range []struct {
		name, first, second string
		want                string // opErr substring
		notFound            bool
	}{
		{name: "missing at the read", first: "*2\r\n$-1\r\n$-1\r\n", want: "not found", notFound: true},
		{name: "missing at the write", first: found, second: "$-1\r\n", want: "not found", notFound: true},
		{name: "refused write", first: found, second: "-READONLY You can't write against a read only replica.\r\n", want: "redis: update article: READONLY"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c.AppendRequest(nil, wiki.OpUpdate, 7)
			opErr, err := reply(t, c, tt.first)
			if err != nil {
				t.Fatal(err)
			}
			if tt.second != "" {
				if opErr != nil {
					t.Fatalf("read: %v", opErr)
				}
				if _, more := c.FollowUp(nil); !more {
					t.Fatal("no write-back")
				}
				if opErr, err = reply(t, c, tt.second); err != nil {
					t.Fatal(err)
				}
			}
			if opErr == nil || !strings.Contains(opErr.Error(), tt.want) || errors.Is(opErr, wiki.ErrNotFound) != tt.notFound {
				t.Errorf("opErr = %v; want one saying %q (not found: %v)", opErr, tt.want, tt.notFound)
			}
		})
	}
	c.AppendRequest(nil, wiki.OpUpdate, 7)
	reply(t, c, found)
	c.FollowUp(nil)
	if _, _, err := c.Reply([]byte(":1\r\n")); err == nil {
		t.Error("an integer reply to SET was taken")
	}
}
