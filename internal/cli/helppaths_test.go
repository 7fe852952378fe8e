package cli

import (
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// repoPath is a word of help text that names a file or directory of the
// repository: under one of its top-level directories a user is sent to.
var repoPath = regexp.MustCompile(`\b(?:scenarios|docs|scripts)/[A-Za-z0-9_./-]*`)

// Every file a help text names exists in the repository: `experiment
// --help` sent users to scenarios/microblog-crash.yaml and
// scenarios/wiki-elasticity.yaml, which never existed (issue 13, finding
// 10). Walks every command's short and long help, examples and flags.
func TestHelpNamesExistingFiles(t *testing.T) {
	t.Parallel()
	var profile *os.File
	root := newRoot(io.Discard, io.Discard, &profile)
	repo := filepath.Join("..", "..")
	seen := 0
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		texts := []string{c.Short, c.Long, c.Example}
		each := func(f *pflag.Flag) { texts = append(texts, f.Usage) }
		c.LocalFlags().VisitAll(each)
		c.PersistentFlags().VisitAll(each)
		for _, text := range texts {
			for _, p := range repoPath.FindAllString(text, -1) {
				p = strings.TrimRight(p, ".,;:")
				seen++
				if _, err := os.Stat(filepath.Join(repo, p)); err != nil {
					t.Errorf("%q names %s, which is not in the repository", c.CommandPath(), p)
				}
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	if seen == 0 {
		t.Fatal("no path found in any help text: the pattern is wrong")
	}
}
