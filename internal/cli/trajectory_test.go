package cli_test

import (
	"context"
	"strings"
	"testing"
)

func TestTrajectoryList(t *testing.T) {
	t.Parallel()
	code, out, _ := execute(context.Background(), "list")
	for _, want := range []string{"trajectory", "write, distance, knn, range, region", "--max-dist", "(default 2000)", "--scale", "(default 0.01)", "--mode", "(default both)"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Fatalf("list lacks %q:\n%s", want, out)
		}
	}
}
