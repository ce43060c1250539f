//go:build integration

package server

import (
	"database/sql"
	"fmt"
	"sync/atomic"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/xrun-dev/xrun/client/history"
	"github.com/xrun-dev/xrun/internal/pgtest"
)

// TestServerPostgres runs the server's suite on a PostgreSQL server it
// starts itself (initdb and pg_ctl in a temporary directory), each
// subtest in a database of its own. Under CI=true a machine without
// PostgreSQL fails the test: CI installs it (scripts/setup.sh).
func TestServerPostgres(t *testing.T) {
	base := pgtest.Start(t)
	admin, err := sql.Open("pgx", base+"postgres?sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	var n atomic.Int32
	runSuite(t, func(t *testing.T) *history.Store {
		name := fmt.Sprintf("suite_%d", n.Add(1))
		if _, err := admin.Exec("CREATE DATABASE " + name); err != nil {
			t.Fatal(err)
		}
		h, err := history.Open(base + name + "?sslmode=disable")
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
	h, err := history.Open(base + "suite_1?sslmode=disable")
	if err != nil {
		t.Fatalf("open again: %v", err)
	}
	h.Close()
}
