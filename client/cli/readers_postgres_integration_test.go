//go:build integration

package cli

import (
	"testing"

	"github.com/xrun-dev/xrun/internal/testenv"
)

// The readers print from a server on PostgreSQL what they print from
// this machine's SQLite history of the same runs.
func TestReadersFromServerPostgres(t *testing.T) {
	db := testenv.PostgresDatabases(t, "readers")
	f := newPushFixtureAt(t, db(t))
	if !f.h.Postgres() {
		t.Fatal("the server's history opened SQLite, not PostgreSQL")
	}
	testReadersFromServer(t, f)
}
