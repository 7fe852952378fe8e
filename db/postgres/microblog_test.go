package postgres

import (
	"testing"

	"github.com/fieldbench/fieldbench/adapter/adaptertest"
	"github.com/fieldbench/fieldbench/workload/microblog"
)

// TestSizeBytes checks that every model's loaded database has a size
// (counts, model and the oracle are adaptertest's).
func TestSizeBytes(t *testing.T) {
	t.Parallel()
	adaptertest.MicroblogSizes(t, openFresh)
}

// TestModelMismatch reopens a loaded database, as a later run does: it
// keeps its model and refuses the others with microblog.ErrModelMismatch.
func TestModelMismatch(t *testing.T) {
	t.Parallel()
	adaptertest.ModelMismatch(t, freshDSN, Open, microblog.ErrModelMismatch)
}

// TestEmptyDatabaseSwitchesModel checks that only data pins the model: an
// empty database opens any.
func TestEmptyDatabaseSwitchesModel(t *testing.T) {
	t.Parallel()
	adaptertest.SwitchesModelWhenEmpty(t, openFresh(t), microblog.ErrModelMismatch)
}
