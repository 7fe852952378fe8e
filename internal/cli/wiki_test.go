package cli_test

import (
	"context"
	"strings"
	"testing"
)

func TestWikiList(t *testing.T) {
	t.Parallel()
	code, out, _ := execute(context.Background(), "list")
	i := strings.Index(out, "wiki —")
	if code != 0 || i < 0 {
		t.Fatalf("list (exit %d) lacks the wiki workload:\n%s", code, out)
	}
	for _, want := range []string{"read, update", "--articles", "--requests", "(default 10000)", "--reads", "(default 80)", "--threads", "--sets", "--repeat", "--dist", "(default uniform)", "--zipf-s", "--from", "--seed", "--db", "--results", "--loop"} {
		if !strings.Contains(out[i:], want) {
			t.Errorf("wiki's list entry lacks %q", want)
		}
	}
}
