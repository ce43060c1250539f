//go:build integration

package history

import (
	"strings"
	"testing"

	"github.com/xrun-dev/xrun/internal/testenv"
)

// TestPostgres runs the history's tests that do not depend on SQLite's
// file (its layouts' upgrades, its backup, its locks, a full disk) on a
// PostgreSQL server it starts, each in a database of its own: the same
// queries serve both.
func TestPostgres(t *testing.T) {
	db := testenv.PostgresDatabases(t, "history")
	openAt = func(t *testing.T) string { return db(t) }
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
		{"WalkFromKeptState", TestWalkFromKeptState},
		{"NoStateKeptOverAChange", TestNoStateKeptOverAChange},
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

// A history whose layout is newer than this xrun's is refused, as an
// SQLite one is: this xrun would not keep the newer layout's tables true.
func TestPostgresNewerLayoutRefused(t *testing.T) {
	where := testenv.PostgresDatabases(t, "history")(t)
	s, err := Open(where)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.db.Exec("INSERT INTO goose_db_version (version_id, is_applied) VALUES (999, true)"); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if s, err := Open(where); err == nil || !strings.Contains(err.Error(), "has layout 999; this xrun reads") {
		if s != nil {
			s.Close()
		}
		t.Fatalf("open of a history of a newer layout: %v; want it refused", err)
	}
}
