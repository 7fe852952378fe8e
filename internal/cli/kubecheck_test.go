package cli_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/fieldbench/fieldbench/internal/cli"
)

// kube job checks the pods' run options as each pod would, with the run
// command's own checks, so it never prints a Job whose pods must fail; a
// Job writing to an emptyDir says that the results die with the pods.
func TestKubeJobChecksThePodsOptions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	later := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	past := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"microblog", "--shards", "4", "--", "--clients", "2"}, cli.ExitUsage, "share of the 2 clients is empty"},
		{[]string{"microblog", "--shards", "2", "--", "--clients", "0"}, cli.ExitUsage, "clients"},
		{[]string{"microblog", "--start-at", "yesterday"}, cli.ExitUsage, "RFC 3339"},
		{[]string{"microblog", "--start-at", past}, cli.ExitUsage, "in the past"},
		{[]string{"microblog", "--start-at", "2099-01-01T00:00:00Z"}, cli.ExitUsage, "more than 24h0m0s ahead"},
		{[]string{"microblog", "--", "--start-at", "yesterday"}, cli.ExitUsage, "RFC 3339"},
		{[]string{"microblog", "--start-at", later, "--", "--start-at", later}, cli.ExitUsage, "--start-at once"},
		{[]string{"trajectory", "--shards", "4", "--", "--mode", "random", "--clients", "4", "--reset"}, cli.ExitUsage, "needs --start-at"},
		{[]string{"ingest", "--command", "sweep", "--shards", "2", "--", "--sources", "1", "--barrier", "/results/b"}, cli.ExitUsage, "share of the 1 sources is empty"},
		{[]string{"microblog", "--command", "load", "--shards", "4", "--", "--users", "3"}, cli.ExitUsage, "share of the 3 users is empty"},
		{[]string{"microblog", "--shards", "2", "--results-claim", "fb-results", "--start-at", later, "--", "--clients", "4"}, cli.ExitOK, "completionMode: Indexed"},
	} {
		args := append([]string{"kube", "job", tc.args[0], "--image", "reg/fb:dev", "--secret", "fb-db/dsn"}, tc.args[1:]...)
		code, out, stderr := execute(ctx, args...)
		if code != tc.code || !strings.Contains(out+stderr, tc.want) {
			t.Errorf("%v: exit %d\n%s%s\nwant exit %d and %q", tc.args, code, out, stderr, tc.code, tc.want)
		}
		if tc.code == cli.ExitUsage && out != "" {
			t.Errorf("%v: refused after printing a Job:\n%s", tc.args, out)
		}
		if tc.code == cli.ExitOK && stderr != "" {
			t.Errorf("%v: a Job on a claim warns: %s", tc.args, stderr)
		}
	}
	code, out, stderr := execute(ctx, "kube", "job", "microblog", "--image", "reg/fb:dev", "--secret", "fb-db/dsn")
	if code != cli.ExitOK || !strings.Contains(out, "emptyDir") || !strings.Contains(stderr, "warning: ") || !strings.Contains(stderr, "--results-claim") {
		t.Errorf("a Job on an emptyDir: exit %d, stderr %q; want a warning naming --results-claim", code, stderr)
	}
}
