package server

import (
	"path/filepath"
	"testing"

	"github.com/xrun-dev/xrun/client/history"
)

func TestServerSQLite(t *testing.T) {
	runSuite(t, func(t *testing.T) *history.Store {
		h, err := history.Open(filepath.Join(t.TempDir(), history.FileName))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { h.Close() })
		return h
	})
}
