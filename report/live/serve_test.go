package live

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"
)

// Serve names the endpoint, and stop ends it: after saying it lingers
// (linger > 0 and ctx not done), at once and silently otherwise; a
// refused address starts nothing.
func TestServe(t *testing.T) {
	t.Parallel()
	done, cancel := context.WithCancel(context.Background())
	cancel()
	for _, c := range []struct {
		name   string
		ctx    context.Context
		linger time.Duration
		said   string // the second line ("": none)
	}{
		{"no linger", context.Background(), 0, ""},
		{"linger", context.Background(), 50 * time.Millisecond, "metrics: run ended; serving its final figures on http://"},
		{"linger after Ctrl-C", done, time.Hour, ""},
	} {
		var progress strings.Builder
		srv, stop, err := Serve(c.ctx, "127.0.0.1:0", false, c.linger, &progress)
		if err != nil {
			t.Fatal(err)
		}
		url := "http://" + srv.Addr() + "/metrics"
		if resp, err := http.Get(url); err != nil {
			t.Errorf("%s: %v", c.name, err)
		} else {
			resp.Body.Close()
		}
		stop()
		lines := strings.Split(strings.TrimSuffix(progress.String(), "\n"), "\n")
		if lines[0] != "metrics: "+url || c.said == "" && len(lines) != 1 || c.said != "" && (len(lines) != 2 || !strings.HasPrefix(lines[1], c.said)) {
			t.Errorf("%s: said %q", c.name, progress.String())
		}
		if resp, err := http.Get(url); err == nil {
			resp.Body.Close()
			t.Errorf("%s: still served after stop", c.name)
		}
	}
	var progress strings.Builder
	if _, _, err := Serve(context.Background(), "10.0.0.1:9464", false, 0, &progress); err == nil || progress.Len() > 0 {
		t.Errorf("a remote address: %v, said %q", err, progress.String())
	}
}
