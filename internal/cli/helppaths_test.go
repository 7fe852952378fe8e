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

// The README's Layout section names every top-level folder of the
// repository, and only folders that exist: a newcomer finds the room of a
// feature from it, so a folder added, renamed or removed must change it.
func TestReadmeLayoutNamesEveryFolder(t *testing.T) {
	t.Parallel()
	repo := filepath.Join("..", "..")
	readme, err := os.ReadFile(filepath.Join(repo, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, layout, ok := strings.Cut(string(readme), "## Layout\n")
	if !ok {
		t.Fatal("README has no Layout section")
	}
	layout, _, _ = strings.Cut(layout, "\n## ")
	named := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^([a-z]+)/ `).FindAllStringSubmatch(layout, -1) {
		named[m[1]] = true
	}
	// Folders git ignores (results/, clusters/: what the quick start
	// writes) are a user's, not the repository's.
	ignore, err := os.ReadFile(filepath.Join(repo, ".gitignore"))
	if err != nil {
		t.Fatal(err)
	}
	ignored := map[string]bool{}
	for _, line := range strings.Split(string(ignore), "\n") {
		ignored[strings.Trim(strings.TrimSpace(line), "/")] = true
	}
	entries, err := os.ReadDir(repo)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") || ignored[e.Name()] {
			continue
		}
		if !named[e.Name()] {
			t.Errorf("README's Layout does not name the folder %s/", e.Name())
		}
		delete(named, e.Name())
	}
	for n := range named {
		t.Errorf("README's Layout names %s/, which does not exist", n)
	}
}
