package adapter

import (
	"strings"
	"testing"
)

// A --db without a scheme may be a password typed in the wrong place: it is
// not echoed (issue 31, finding 4: --db S3CRETpw was).
func TestForDSNDoesNotEchoSchemeless(t *testing.T) {
	t.Parallel()
	for _, dsn := range []string{"S3CRETpw", "user:S3CRETpw", "S3CRETpw@host"} {
		_, err := ForDSN(dsn)
		if err == nil || strings.Contains(err.Error(), "S3CRET") {
			t.Errorf("ForDSN(%q): %v", dsn, err)
		}
	}
}
