package redis

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fieldbench/fieldbench/adapter"
	"github.com/fieldbench/fieldbench/cluster"
	"github.com/fieldbench/fieldbench/workload/microblog"
)

// The package's tests share two servers started once: a 3-master Redis
// Cluster (every family but ingest) and one standalone server (ingest,
// whose Reset is FLUSHALL, and a microblog run without cluster mode).
// TestMain stops them.
var servers struct {
	once       sync.Once
	err        error
	engine     cluster.Engine
	cl, single *cluster.Cluster
	dirs       []string
}

func TestMain(m *testing.M) {
	code := m.Run()
	if servers.engine != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		for _, c := range []*cluster.Cluster{servers.cl, servers.single} {
			if c != nil {
				_ = servers.engine.Down(ctx, c)
			}
		}
		cancel()
		if code == 0 {
			for _, d := range servers.dirs {
				os.RemoveAll(d)
			}
		}
	}
	os.Exit(code)
}

func startServers() error {
	e, err := cluster.Get("redis")
	if err != nil {
		return err
	}
	if err := e.Check(); err != nil {
		return fmt.Errorf("redis is not installed (run scripts/install-servers.sh): %w", err)
	}
	servers.engine = e
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	up := func(opts cluster.Options) (*cluster.Cluster, error) {
		dir, err := os.MkdirTemp("", "fb-redis-adapter-*")
		if err != nil {
			return nil, err
		}
		servers.dirs = append(servers.dirs, dir)
		return e.Up(ctx, dir, opts)
	}
	servers.cl, err = up(cluster.Options{Nodes: 3})
	if err != nil {
		return err
	}
	servers.single, err = up(cluster.Options{Nodes: 1, Extra: map[string]string{"standalone": "1"}})
	return err
}

// dsn returns the DSN of the shared cluster (or standalone server), failing
// the test when redis cannot run here (skipping under -short).
func dsn(t testing.TB, standalone bool) string {
	t.Helper()
	servers.once.Do(func() { servers.err = startServers() })
	if servers.err != nil {
		if testing.Short() && strings.Contains(servers.err.Error(), "install-servers.sh") {
			t.Skip(servers.err)
		}
		t.Fatal(servers.err)
	}
	if standalone {
		return servers.single.DSN
	}
	return servers.cl.DSN
}

func open(t testing.TB, standalone bool) *DB {
	t.Helper()
	db, err := Open(context.Background(), dsn(t, standalone))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func TestParseDSN(t *testing.T) {
	for _, tc := range []struct {
		dsn     string
		addrs   []string
		cluster bool
		pass    string
		err     string
	}{
		{dsn: "redis://127.0.0.1:7000", addrs: []string{"127.0.0.1:7000"}},
		{dsn: "redis://127.0.0.1:7000?cluster=1&addrs=127.0.0.1:7001,127.0.0.1:7002", addrs: []string{"127.0.0.1:7000", "127.0.0.1:7001", "127.0.0.1:7002"}, cluster: true},
		{dsn: "redis://u:secret@h:1", addrs: []string{"h:1"}, pass: "secret"},
		{dsn: "redis://h:1?addrs=h:2", err: "cluster=1"},
		{dsn: "redis://h:1/3", err: "database 0"},
		{dsn: "redis://h:1?bogus=1", err: "unknown option"},
		{dsn: "redis://u:secret@", err: "no host"},
		{dsn: "mysql://h:1", err: "redis://"},
	} {
		c, err := ParseDSN(tc.dsn)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) || strings.Contains(err.Error(), "secret") {
				t.Errorf("ParseDSN(%q) = %v, want an error about %q without the password", tc.dsn, err, tc.err)
			}
			continue
		}
		if err != nil || !slices.Equal(c.Addrs, tc.addrs) || c.Cluster != tc.cluster || c.Password != tc.pass {
			t.Errorf("ParseDSN(%q) = %+v, %v", tc.dsn, c, err)
		}
	}
}

func TestRegisteredFamilies(t *testing.T) {
	a, err := adapter.ForDSN("redis://127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	if got := a.Families(); !slices.Equal(got, []string{"ingest", "microblog", "trajectory", "wiki"}) {
		t.Fatalf("families %v", got)
	}
}

func TestInfoAndSize(t *testing.T) {
	for _, standalone := range []bool{false, true} {
		db := open(t, standalone)
		info, err := db.Info(t.Context())
		if err != nil || info.Name != "redis" || !strings.HasPrefix(info.Version, "7.") || info.Config["appendonly"] != "yes" {
			t.Fatalf("Info = %+v, %v", info, err)
		}
		want := map[bool]string{false: "3", true: "1"}[standalone]
		if info.Config["masters"] != want {
			t.Errorf("standalone=%v: masters %q, want %s", standalone, info.Config["masters"], want)
		}
		if n, err := db.SizeBytes(t.Context()); err != nil || n < 0 {
			t.Fatalf("SizeBytes = %d, %v", n, err)
		}
	}
}

// resetMicroblog removes every microblog key so the next model starts on
// an empty database.
func resetMicroblog(t *testing.T, db *DB) {
	t.Helper()
	if err := db.scanDelete(context.Background(), "mb:*"); err != nil {
		t.Fatal(err)
	}
}

func sameTweets(got, want []microblog.Tweet) error {
	if len(got) != len(want) {
		return fmt.Errorf("got %d tweets, want %d", len(got), len(want))
	}
	for i := range got {
		g, w := got[i], want[i]
		if g.ID != w.ID || g.Author != w.Author || g.Time.UnixMicro() != w.Time.UnixMicro() || g.Body != w.Body || g.Time.Location() != time.UTC {
			return fmt.Errorf("tweet %d: got {id %d author %d time %d body %q}, want {id %d author %d time %d body %q}",
				i, g.ID, g.Author, g.Time.UnixMicro(), g.Body, w.ID, w.Author, w.Time.UnixMicro(), w.Body)
		}
	}
	return nil
}

func compareAll(t *testing.T, s microblog.Store, o *microblog.Oracle, users int, limits ...int) {
	t.Helper()
	ctx := t.Context()
	if len(limits) == 0 {
		limits = []int{microblog.Limit}
	}
	bad := 0
	for _, limit := range limits {
		for u := int64(1); u <= int64(users); u++ {
			ul, err := s.Userline(ctx, u, limit)
			if err != nil {
				t.Fatalf("Userline(%d): %v", u, err)
			}
			if err := sameTweets(ul, o.Userline(u, limit)); err != nil {
				t.Errorf("Userline(%d, %d): %v", u, limit, err)
				bad++
			}
			tl, err := s.Timeline(ctx, u, limit)
			if err != nil {
				t.Fatalf("Timeline(%d): %v", u, err)
			}
			if err := sameTweets(tl, o.Timeline(u, limit)); err != nil {
				t.Errorf("Timeline(%d, %d): %v", u, limit, err)
				bad++
			}
			if bad > 10 {
				t.Fatal("too many mismatches")
			}
		}
	}
}

func catchUp(t *testing.T, s microblog.Store) {
	t.Helper()
	m, ok := s.(microblog.Materializer)
	if !ok {
		return
	}
	for range 1000 {
		done, err := m.MaterializeOnce(t.Context())
		if err != nil {
			t.Fatalf("MaterializeOnce: %v", err)
		}
		if len(done) == 0 {
			return
		}
	}
	t.Fatal("materializer never caught up")
}

// TestMicroblogOracle loads a generated dataset into the 3-master cluster
// (and the standalone server) for each model, compares every userline and
// timeline with the oracle, posts concurrently (tied times included) with
// readers and the materializer running, and compares again.
func TestMicroblogOracle(t *testing.T) {
	const users = 120
	ds, err := microblog.Generate(microblog.GenOptions{Users: users, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	for _, standalone := range []bool{false, true} {
		for _, m := range microblog.Models {
			name := string(m) + map[bool]string{false: "/cluster", true: "/standalone"}[standalone]
			t.Run(name, func(t *testing.T) {
				ctx := t.Context()
				db := open(t, standalone)
				resetMicroblog(t, db)
				t.Cleanup(func() { resetMicroblog(t, db) })
				s, err := db.Microblog(ctx, m)
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				if c, err := s.Counts(ctx); err != nil || c != (microblog.Counts{}) {
					t.Fatalf("Counts of an empty database = %+v, %v", c, err)
				}
				start := time.Now()
				if err := s.Populate(ctx, ds); err != nil {
					t.Fatalf("Populate: %v", err)
				}
				t.Logf("populate %d users, %d follows, %d tweets: %v", ds.Users, len(ds.Follows), len(ds.Tweets), time.Since(start))
				if err := s.Populate(ctx, ds); err == nil {
					t.Fatal("second Populate succeeded")
				}
				c, err := s.Counts(ctx)
				if want := (microblog.Counts{Users: users, Follows: int64(len(ds.Follows)), Tweets: int64(len(ds.Tweets))}); err != nil || c != want {
					t.Fatalf("Counts = %+v, %v; want %+v", c, err, want)
				}
				if got, err := db.MicroblogModel(ctx); err != nil || got != m {
					t.Fatalf("MicroblogModel = %q, %v", got, err)
				}
				for _, other := range microblog.Models {
					if other != m {
						if _, err := db.Microblog(ctx, other); !errors.Is(err, ErrModelMismatch) {
							t.Fatalf("Microblog(%s) on %s data: %v", other, m, err)
						}
					}
				}
				if m == microblog.Async {
					if done, err := s.(microblog.Materializer).MaterializeOnce(ctx); err != nil || len(done) != 0 {
						t.Fatalf("after Populate MaterializeOnce = %d, %v", len(done), err)
					}
				}
				o := microblog.NewOracle(ds)
				compareAll(t, s, o, users, microblog.Limit, 0, 1, 3)

				maxID, err := s.MaxTweetID(ctx)
				if err != nil || maxID != ds.Tweets[len(ds.Tweets)-1].ID {
					t.Fatalf("MaxTweetID = %d, %v", maxID, err)
				}
				const posts = 300
				r := rand.New(rand.NewPCG(3, 7))
				base := time.Now().Truncate(time.Microsecond)
				tweets := make([]microblog.Tweet, posts)
				for i := range tweets {
					tweets[i] = microblog.Tweet{
						ID: maxID + 1 + int64(i), Author: 1 + r.Int64N(users),
						Time: base.Add(time.Duration(i/3) * time.Microsecond), // ties
						Body: microblog.RandomBody(r) + "|pipe",
					}
				}
				for i := 0; i < 30; i += 3 {
					tweets[i+1].Author = tweets[i].Author
				}
				var wg sync.WaitGroup
				errs := make(chan error, posts+200)
				const clients = 16
				for cl := range clients {
					wg.Go(func() {
						for i := cl; i < posts; i += clients {
							if err := s.Post(ctx, tweets[i]); err != nil {
								errs <- fmt.Errorf("Post(%d): %w", tweets[i].ID, err)
							}
						}
					})
				}
				for cl := range 4 {
					wg.Go(func() {
						for i := range 50 {
							if _, err := s.Timeline(ctx, int64(1+(cl*50+i)%users), microblog.Limit); err != nil {
								errs <- err
							}
						}
					})
				}
				if m == microblog.Async {
					wg.Go(func() {
						for range 20 {
							if _, err := s.(microblog.Materializer).MaterializeOnce(ctx); err != nil {
								errs <- err
							}
						}
					})
				}
				wg.Wait()
				close(errs)
				for err := range errs {
					t.Fatal(err)
				}
				for _, tw := range tweets {
					o.Post(tw)
				}
				catchUp(t, s)
				compareAll(t, s, o, users)
				if got, err := s.MaxTweetID(ctx); err != nil || got != maxID+posts {
					t.Errorf("MaxTweetID after posts = %d, %v", got, err)
				}
				if err := s.Post(ctx, tweets[0]); err == nil {
					t.Error("Post of an existing tweet id succeeded")
				}
			})
		}
	}
}
