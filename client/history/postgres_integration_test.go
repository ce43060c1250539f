//go:build integration

package history

import (
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
