package postgres

import (
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/fieldbench/fieldbench/workload/wiki"
)

// encode appends the messages' wire form.
func encode(t *testing.T, msgs ...pgproto3.BackendMessage) []byte {
	t.Helper()
	var b []byte
	for _, m := range msgs {
		var err error
		if b, err = m.Encode(b); err != nil {
			t.Fatal(err)
		}
	}
	return b
}

// TestParseWikiUpdate: the reply to the event loop's write-back, whole and
// cut short at every byte (incomplete, never an error).
func TestParseWikiUpdate(t *testing.T) {
	ready := &pgproto3.ReadyForQuery{TxStatus: 'I'}
	tag := func(s string) *pgproto3.CommandComplete { return &pgproto3.CommandComplete{CommandTag: []byte(s)} }
	tests := []struct {
		name     string
		reply    []byte
		opErr    string // substring; "" = success
		notFound bool
		err      string
	}{
		{name: "one row", reply: encode(t, &pgproto3.BindComplete{}, tag("UPDATE 1"), ready)},
		{name: "with a notice", reply: encode(t, &pgproto3.BindComplete{}, &pgproto3.NoticeResponse{Severity: "NOTICE", Code: "00000", Message: "hi"}, tag("UPDATE 1"), ready)},
		{name: "missing article", reply: encode(t, &pgproto3.BindComplete{}, tag("UPDATE 0"), ready), opErr: "not found", notFound: true},
		{name: "two rows", reply: encode(t, &pgproto3.BindComplete{}, tag("UPDATE 2"), ready), opErr: `unexpected command tag "UPDATE 2"`},
		{name: "server error", reply: encode(t, &pgproto3.ErrorResponse{Severity: "ERROR", Code: "55P03", Message: "lock timeout"}, ready), opErr: "lock timeout"},
		{name: "foreign message", reply: encode(t, &pgproto3.BindComplete{}, &pgproto3.DataRow{Values: [][]byte{[]byte("x")}}, tag("UPDATE 1"), ready), err: "unexpected message"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for cut := range len(tt.reply) {
				if end, opErr, err := parseWikiUpdate(tt.reply[:cut]); end != 0 || opErr != nil || err != nil {
					t.Fatalf("cut at %d of %d: %d, %v, %v; want incomplete", cut, len(tt.reply), end, opErr, err)
				}
			}
			end, opErr, err := parseWikiUpdate(append(tt.reply, 'Z')) // a byte of what follows is not the reply's
			switch {
			case tt.err != "":
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v; want one saying %q", err, tt.err)
				}
				return
			case err != nil:
				t.Fatal(err)
			case end != len(tt.reply):
				t.Errorf("end = %d; want %d", end, len(tt.reply))
			}
			if tt.opErr == "" && opErr != nil || tt.opErr != "" && (opErr == nil || !strings.Contains(opErr.Error(), tt.opErr)) {
				t.Errorf("opErr = %v; want %q", opErr, tt.opErr)
			}
			if errors.Is(opErr, wiki.ErrNotFound) != tt.notFound {
				t.Errorf("opErr = %v: not found %v, want %v", opErr, !tt.notFound, tt.notFound)
			}
		})
	}
}

// TestWikiConnUpdate: an update's read keeps a copy of the body (the
// loop's reply buffer is reused) and the write-back carries it with "1"
// appended; a read, or an update whose read failed, has no second request.
func TestWikiConnUpdate(t *testing.T) {
	c := &wikiConn{params: [][]byte{make([]byte, 8)}, upd: [][]byte{nil, make([]byte, 8)}}
	row := encode(t, &pgproto3.BindComplete{}, &pgproto3.DataRow{Values: [][]byte{[]byte("title"), []byte("body")}},
		&pgproto3.CommandComplete{CommandTag: []byte("SELECT 1")}, &pgproto3.ReadyForQuery{TxStatus: 'I'})
	c.AppendRequest(nil, wiki.OpRead, 5)
	if end, opErr, err := c.Reply(row); end != len(row) || opErr != nil || err != nil {
		t.Fatalf("read reply: %d, %v, %v", end, opErr, err)
	}
	if _, more := c.FollowUp(nil); more {
		t.Fatal("a read asked for a second request")
	}
	c.AppendRequest(nil, wiki.OpUpdate, 5)
	if end, opErr, err := c.Reply(row); end != len(row) || opErr != nil || err != nil {
		t.Fatalf("update's read reply: %d, %v, %v", end, opErr, err)
	}
	clear(row) // the loop reuses its buffer
	req, more := c.FollowUp(nil)
	if !more {
		t.Fatal("an update sent no write-back")
	}
	want := appendWikiUpdate(nil, [][]byte{nil, make([]byte, 8)}, []byte("body1"), 5)
	if string(req) != string(want) {
		t.Errorf("write-back %q; want %q", req, want)
	}
	if _, more := c.FollowUp(nil); more {
		t.Error("an update asked for a third request")
	}
	missing := encode(t, &pgproto3.BindComplete{}, &pgproto3.CommandComplete{CommandTag: []byte("SELECT 0")}, &pgproto3.ReadyForQuery{TxStatus: 'I'})
	c.AppendRequest(nil, wiki.OpUpdate, 6)
	if _, opErr, _ := c.Reply(missing); !errors.Is(opErr, wiki.ErrNotFound) {
		t.Errorf("update of a missing article: %v; want not found", opErr)
	}
}
