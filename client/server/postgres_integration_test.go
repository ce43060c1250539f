//go:build integration

package server

import (
	"testing"

	"github.com/xrun-dev/xrun/client/history"
	"github.com/xrun-dev/xrun/internal/testenv"
)

// TestServerPostgres runs the server's suite on a PostgreSQL server it
// starts itself (initdb and pg_ctl in a temporary directory), each
// subtest in a database of its own. Under CI=true a machine without
// PostgreSQL fails the test: CI installs it (scripts/setup.sh).
func TestServerPostgres(t *testing.T) {
	db := testenv.PostgresDatabases(t, "suite")
	var first string
	runSuite(t, func(t *testing.T) *history.Store {
		u := db(t)
		if first == "" {
			first = u
		}
		h, err := history.Open(u)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { h.Close() })
		if !h.Postgres() {
			t.Fatal("the history opened SQLite, not PostgreSQL")
		}
		return h
	})
	// Opening it again finds the layout applied: goose applies nothing.
	h, err := history.Open(first)
	if err != nil {
		t.Fatalf("open again: %v", err)
	}
	h.Close()
}
