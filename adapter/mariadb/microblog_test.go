package mariadb

import (
	"testing"

	"github.com/fieldbench/fieldbench/adapter/adaptertest"
)

// TestMicroblogModelMismatch checks that an empty database switches model
// freely and a loaded one refuses another with ErrModelMismatch.
func TestMicroblogModelMismatch(t *testing.T) {
	t.Parallel()
	adaptertest.SwitchesModelWhenEmpty(t, openFresh(t), ErrModelMismatch)
}
