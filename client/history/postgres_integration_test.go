//go:build integration

package history

import (
	"database/sql"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/xrun-dev/xrun/internal/pgtest"
)

// TestPostgres runs the history's tests that do not depend on SQLite's
// file (its layouts' upgrades, its backup, its locks, a full disk) on a
// PostgreSQL server it starts, each in a database of its own: the same
// queries serve both.
func TestPostgres(t *testing.T) {
	base := pgtest.Start(t)
	admin, err := sql.Open("pgx", base+"postgres?sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	var n atomic.Int32
	openAt = func(t *testing.T) string {
		name := fmt.Sprintf("history_%d", n.Add(1))
		if _, err := admin.Exec("CREATE DATABASE " + name); err != nil {
			t.Fatal(err)
		}
		return base + name + "?sslmode=disable"
	}
	defer func() { openAt = nil }()
	for _, c := range []struct {
		name string
		test func(*testing.T)
	}{
		{"ImportCommittedResults", TestImportCommittedResults},
		{"ImportRefusesPartialResults", TestImportRefusesPartialResults},
		{"JudgeAndChangePoint", TestJudgeAndChangePoint},
		{"JudgeHostSlower", TestJudgeHostSlower},
		{"ImportStore", TestImportStore},
		{"AutotuneKept", TestAutotuneKept},
		{"HostBusyIsNoisy", TestHostBusyIsNoisy},
		{"PowerCappedNightsAreJudged", TestPowerCappedNightsAreJudged},
		{"OneSlowedDownTimingAmongCleanOnes", TestOneSlowedDownTimingAmongCleanOnes},
		{"ManySeriesInOneFilter", TestManySeriesInOneFilter},
		{"Remove", TestRemove},
		{"Reported", TestReported},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := open(t)
			if !s.Postgres() {
				t.Fatal("open gave SQLite, not PostgreSQL")
			}
			s.Close()
			c.test(t)
		})
	}
}
