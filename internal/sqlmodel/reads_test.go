package sqlmodel

import (
	"strconv"
	"strings"
	"testing"

	"github.com/fieldbench/fieldbench/workload/microblog"
)

func fold(s string) string { return strings.Join(strings.Fields(s), " ") }

// TestLineSQL: in PostgreSQL's placeholders, the statements are those the
// postgres adapter sent before they were shared.
func TestLineSQL(t *testing.T) {
	dollar := func(n int) string { return "$" + strconv.Itoa(n) }
	withBodies := `select tweet_id, author, time, body from timeline where owner = $1 order by time desc, tweet_id desc limit $2`
	byIDs := `select t.id, t.author, t.time, t.body from (select tweet_id, time from %s where owner = $1
		order by time desc, tweet_id desc limit $2) as l join tweets as t on t.id = l.tweet_id order by l.time desc, l.tweet_id desc`
	for _, tc := range []struct {
		model              microblog.Model
		userline, timeline string
	}{
		{microblog.Denormalized, `select tweet_id, owner, time, body from userline where owner = $1 order by time desc, tweet_id desc limit $2`, withBodies},
		{microblog.Normalized, strings.Replace(byIDs, "%s", "userline", 1), strings.Replace(byIDs, "%s", "timeline", 1)},
		{microblog.Async, `select id, author, time, body from tweets where author = $1 order by time desc, id desc limit $2`, withBodies},
	} {
		u, tl := LineSQL(tc.model, dollar)
		if fold(u) != fold(tc.userline) || fold(tl) != fold(tc.timeline) {
			t.Errorf("%s:\n%s\n%s\nwant\n%s\n%s", tc.model, fold(u), fold(tl), fold(tc.userline), fold(tc.timeline))
		}
	}
}

// TestSchemaTables: every model's statements create exactly its
// ModelTables, the async model's with the pending column and the
// dialect's indexes after its tweets table.
func TestSchemaTables(t *testing.T) {
	ty := Types{Int: "bigint", Key: "bigint primary key", Text: func(n int) string { return "varchar(" + strconv.Itoa(n) + ")" },
		Clustered: " without rowid", Pending: "pending bool", Indexes: []string{"create index tweets_pending"}}
	for _, m := range microblog.Models {
		var tables []string
		stmts := ty.Schema(m)
		for i, s := range stmts {
			f := fold(s)
			if name, ok := strings.CutPrefix(f, "create table if not exists "); ok {
				tables = append(tables, strings.Fields(name)[0])
			}
			if strings.Contains(f, "userline") && !strings.HasSuffix(f, ") without rowid") {
				t.Errorf("%s: userline not clustered: %s", m, f)
			}
			if m == microblog.Async && strings.HasPrefix(f, "create table if not exists tweets") &&
				(!strings.Contains(f, "body varchar(560) not null, pending bool )") || stmts[i+1] != "create index tweets_pending") {
				t.Errorf("async tweets: %s, then %q", f, stmts[i+1])
			}
		}
		if strings.Join(tables, " ") != strings.Join(ModelTables[m], " ") {
			t.Errorf("%s creates %v, want %v", m, tables, ModelTables[m])
		}
	}
}
