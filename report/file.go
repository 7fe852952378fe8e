package report

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/fieldbench/fieldbench/result"
)

// WriteFile renders runs as HTML to path via a temporary file, so a failure
// never leaves half a report behind.
func WriteFile(path string, runs []*result.Run) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".report-*.html")
	if err != nil {
		return fmt.Errorf("write report %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	_ = tmp.Chmod(0o644) // CreateTemp makes 0600; a report is for sharing
	if err := HTML(tmp, runs); err != nil {
		tmp.Close()
		return fmt.Errorf("render report: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write report %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write report %s: %w", path, err)
	}
	return nil
}
