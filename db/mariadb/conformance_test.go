package mariadb

import (
	"testing"

	"github.com/fieldbench/fieldbench/adapter"
	"github.com/fieldbench/fieldbench/adapter/adaptertest"
)

// TestConformance runs the shared conformance suite against the package's
// real server, a fresh database for every family check.
func TestConformance(t *testing.T) {
	adaptertest.Run(t, func(t *testing.T) adapter.DB { return openFresh(t) })
}
