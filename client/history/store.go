// Package history is xrun's results history: every finished job's
// results.json, and any a user imports (committed results, a nightly's
// artifacts), split into series and kept in an embedded SQLite database
// (modernc.org/sqlite, pure Go), or in PostgreSQL for a team's server
// (Open of a postgres:// URL; the same queries, dialect.go). A series is
// one implementation at one case of one experiment on one kind of machine
// (Key); the host and the GPU's UUID are kept with each run and can be
// filtered on.
//
// The database is safe for several writers (two nightly jobs at once: WAL,
// a busy timeout, every import one immediate transaction) and survives a
// writer killed mid-write (SQLite's journal; synchronous=FULL). It must be
// on a local disk: SQLite's locks do not hold on network file systems.
package history

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"time"

	"modernc.org/sqlite" // the database/sql driver "sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// FileName is the database's name beside the job store.
const FileName = "history.db"

// EnvPath names a variable that overrides where the history is.
const EnvPath = "XRUN_HISTORY"

// DefaultPath is $XRUN_HISTORY, else $XDG_DATA_HOME/xrun/history.db, else
// ~/.local/share/xrun/history.db.
func DefaultPath(getenv func(string) string) (string, error) {
	if p := getenv(EnvPath); p != "" {
		return p, nil
	}
	if d := getenv("XDG_DATA_HOME"); d != "" {
		return filepath.Join(d, "xrun", FileName), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("find the results history: %w (set XDG_DATA_HOME or %s)", err, EnvPath)
	}
	return filepath.Join(home, ".local", "share", "xrun", FileName), nil
}

// busyTimeout is how long a writer waits for another's transaction: an
// import takes milliseconds, so this is only ever reached by a stuck
// process.
const busyTimeout = 30 * time.Second

// schemaVersion is the layout below (PRAGMA user_version). 2 added
// runs.baseline, points.autotune and points.host_busy; 3 removed_jobs;
// 4 reported; 5 each timing's clock readings (points.sm_clock_mhz ...
// points.slowdown), which the noise rule judges against its series'; 6
// the rules' kept state (walk_states, walk_epochs), which every import,
// removal and change point must keep true: an xrun that does not would
// leave it stale, so it must refuse the layout.
const schemaVersion = 6

// clockColumns are the points' columns of layout 5, as a layout before it
// gets them: rows imported before them read no clock readings (zero, empty).
var clockColumns = []string{
	"sm_clock_mhz INTEGER NOT NULL DEFAULT 0",
	"max_sm_clock_mhz INTEGER NOT NULL DEFAULT 0",
	"power_w REAL NOT NULL DEFAULT 0",
	"clock_readings INTEGER NOT NULL DEFAULT 0",
	"clock_reasons TEXT NOT NULL DEFAULT ''",
	"slowdown TEXT NOT NULL DEFAULT ''",
}

const schema = `
CREATE TABLE IF NOT EXISTS series (
	id             INTEGER PRIMARY KEY,
	key            TEXT NOT NULL UNIQUE,
	experiment     TEXT NOT NULL,
	case_label     TEXT NOT NULL,
	params         TEXT NOT NULL,
	implementation TEXT NOT NULL,
	gpu            TEXT NOT NULL,
	driver         TEXT NOT NULL,
	cuda           TEXT NOT NULL,
	stack          TEXT NOT NULL,
	clock_policy   TEXT NOT NULL,
	mode           TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS series_experiment ON series(experiment);
CREATE TABLE IF NOT EXISTS runs (
	id          INTEGER PRIMARY KEY,
	run_key     TEXT NOT NULL UNIQUE,
	job_id      TEXT NOT NULL,
	experiment  TEXT NOT NULL,
	at          INTEGER NOT NULL,
	status      TEXT NOT NULL,
	mode        TEXT NOT NULL,
	host        TEXT NOT NULL,
	address     TEXT NOT NULL,
	gpu         TEXT NOT NULL,
	gpu_uuid    TEXT NOT NULL,
	driver      TEXT NOT NULL,
	cuda        TEXT NOT NULL,
	torch       TEXT NOT NULL,
	git_commit  TEXT NOT NULL,
	source      TEXT NOT NULL,
	imported_at INTEGER NOT NULL,
	baseline    TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS runs_job ON runs(job_id);
CREATE INDEX IF NOT EXISTS runs_experiment ON runs(experiment, at);
CREATE TABLE IF NOT EXISTS points (
	run_id         INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
	series_id      INTEGER NOT NULL REFERENCES series(id),
	impl_status    TEXT NOT NULL,
	error          TEXT NOT NULL,
	median_ms      REAL NOT NULL,
	q1_ms          REAL NOT NULL,
	q3_ms          REAL NOT NULL,
	clock          TEXT NOT NULL,
	samples        INTEGER NOT NULL,
	converged      INTEGER NOT NULL,
	throttled      INTEGER NOT NULL,
	host_busy      INTEGER NOT NULL DEFAULT 0,
	tflops         REAL NOT NULL,
	gbps           REAL NOT NULL,
	pct_peak_flops REAL NOT NULL,
	pct_peak_bw    REAL NOT NULL,
	intensity      REAL NOT NULL,
	bound          TEXT NOT NULL,
	speedup        REAL NOT NULL,
	verdict        TEXT NOT NULL,
	kept           TEXT NOT NULL,
	autotune       TEXT NOT NULL DEFAULT '',
	sm_clock_mhz   INTEGER NOT NULL DEFAULT 0,
	max_sm_clock_mhz INTEGER NOT NULL DEFAULT 0,
	power_w        REAL NOT NULL DEFAULT 0,
	clock_readings INTEGER NOT NULL DEFAULT 0,
	clock_reasons  TEXT NOT NULL DEFAULT '',
	slowdown       TEXT NOT NULL DEFAULT '',
	PRIMARY KEY (run_id, series_id)
);
CREATE INDEX IF NOT EXISTS points_series ON points(series_id);
CREATE TABLE IF NOT EXISTS change_points (
	id         INTEGER PRIMARY KEY,
	series_id  INTEGER NOT NULL REFERENCES series(id),
	at         INTEGER NOT NULL,
	job_id     TEXT NOT NULL,
	note       TEXT NOT NULL,
	created_at INTEGER NOT NULL,
	UNIQUE (series_id, at)
);
CREATE TABLE IF NOT EXISTS removed_jobs (
	job_id     TEXT PRIMARY KEY,
	removed_at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS reported (
	run_id      INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
	series_id   INTEGER NOT NULL,
	verdict     TEXT NOT NULL,
	reported_at INTEGER NOT NULL,
	PRIMARY KEY (run_id, series_id)
);
CREATE TABLE IF NOT EXISTS tokens (
	name       TEXT PRIMARY KEY,
	hash       TEXT NOT NULL UNIQUE,
	scope      TEXT NOT NULL,
	created_at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS results_files (
	job_id    TEXT PRIMARY KEY,
	body      BLOB NOT NULL,
	stored_at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS sessions (
	id         TEXT PRIMARY KEY,
	token_hash TEXT NOT NULL,
	expires_at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS walk_states (
	grp        TEXT PRIMARY KEY,
	experiment TEXT NOT NULL,
	rule       TEXT NOT NULL,
	at         INTEGER NOT NULL,
	run_id     INTEGER NOT NULL,
	state      TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS walk_states_experiment ON walk_states(experiment, at);
CREATE TABLE IF NOT EXISTS walk_epochs (
	experiment TEXT PRIMARY KEY,
	epoch      INTEGER NOT NULL
);
`

// Store is an open history.
type Store struct {
	db   *db
	path string
	// resumed counts the groups walks judged from a kept state, for the
	// tests (walks run side by side in a server).
	resumed atomic.Int64
}

// Open opens the history at path, creating it (and its directory) when it
// does not exist; a postgres:// URL opens it in that PostgreSQL database
// instead (IsURL), creating its tables there.
func Open(path string) (*Store, error) {
	if IsURL(path) {
		return openPostgres(path)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("open results history %s: %w", path, err)
	}
	q := url.Values{}
	for _, p := range []string{
		fmt.Sprintf("busy_timeout(%d)", busyTimeout.Milliseconds()),
		"journal_mode(WAL)",
		"synchronous(FULL)",
		"foreign_keys(1)",
	} {
		q.Add("_pragma", p)
	}
	// Immediate transactions take the write lock at BEGIN, so two writers
	// queue on the busy timeout instead of one failing to upgrade its read
	// lock (SQLITE_BUSY at once, whatever the timeout).
	q.Set("_txlock", "immediate")
	sdb, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("open results history %s: %w", path, err)
	}
	// One connection: a CLI process needs no more, and it keeps the
	// process's own statements from waiting on each other.
	sdb.SetMaxOpenConns(1)
	s := &Store{db: &db{sql: sdb}, path: path}
	// Switching a new database to WAL, or reading one whose last writer
	// died, can find it locked without SQLite's busy handler being asked:
	// such a first connection is retried.
	deadline := time.Now().Add(busyTimeout)
	for {
		err = s.migrate()
		if err == nil || !isBusy(err) || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		sdb.Close()
		return nil, fmt.Errorf("open results history %s: %w", path, err)
	}
	return s, nil
}

// IsStorage reports whether err is the machine's, not the input's: the
// disk is full, SQLite could not read or write the history's file, or
// PostgreSQL could not be reached or is out of room.
func IsStorage(err error) bool {
	if isPostgresStorage(err) {
		return true
	}
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EIO) || errors.Is(err, syscall.EDQUOT) {
		return true
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_FULL, sqlite3.SQLITE_IOERR, sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_READONLY, sqlite3.SQLITE_CORRUPT:
			return true
		}
	}
	return false
}

// isBusy reports whether err is SQLite's "database is locked".
func isBusy(err error) bool {
	var se *sqlite.Error
	if errors.As(err, &se) {
		return se.Code()&0xff == sqlite3.SQLITE_BUSY
	}
	return false
}

func (s *Store) migrate() error {
	ctx := context.Background()
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var v int
	if err := tx.QueryRow("PRAGMA user_version").Scan(&v); err != nil {
		return err
	}
	if v > schemaVersion {
		return fmt.Errorf("the history has layout %d; this xrun reads %d (use a newer xrun)", v, schemaVersion)
	}
	// The schema's statements run on every open (each is IF NOT EXISTS):
	// the server's tokens, results_files and sessions tables, and the
	// rules' kept state (walk_states, walk_epochs), join a history of the current layout
	// without a new layout number, which an older xrun would refuse.
	if v == 1 {
		if err := addBaseline(tx); err != nil {
			return err
		}
		for _, q := range []string{
			"ALTER TABLE points ADD COLUMN autotune TEXT NOT NULL DEFAULT ''",
			"ALTER TABLE points ADD COLUMN host_busy INTEGER NOT NULL DEFAULT 0",
		} {
			if _, err := tx.Exec(q); err != nil {
				return err
			}
		}
	}
	if v >= 1 && v < 5 {
		for _, c := range clockColumns {
			if _, err := tx.Exec("ALTER TABLE points ADD COLUMN " + c); err != nil {
				return err
			}
		}
	}
	if _, err := tx.Exec(schema); err != nil {
		return err
	}
	if _, err := tx.Exec(fmt.Sprintf("PRAGMA user_version = %d", schemaVersion)); err != nil {
		return err
	}
	return tx.Commit()
}

// addBaseline adds runs.baseline to a layout-1 history and fills it from
// what its points say: the implementations compared with the baseline
// have a speedup, the baseline none. A run where that does not name one
// implementation keeps "": the rule judges it on the host factor.
func addBaseline(tx *tx) error {
	if _, err := tx.Exec("ALTER TABLE runs ADD COLUMN baseline TEXT NOT NULL DEFAULT ''"); err != nil {
		return err
	}
	_, err := tx.Exec(`UPDATE runs SET baseline = COALESCE((
		SELECT CASE WHEN count(*) = 1 THEN max(s.implementation)
			WHEN count(*) = 0 THEN 'reference' END
		FROM points p JOIN series s ON s.id = p.series_id
		WHERE p.run_id = runs.id AND p.impl_status = 'ok' AND p.median_ms > 0 AND p.speedup = 0 AND s.implementation != 'reference'
		), '')
		WHERE EXISTS (SELECT 1 FROM points p WHERE p.run_id = runs.id AND p.speedup > 0)`)
	return err
}

// Path is the database's file, or its PostgreSQL URL without the
// password and query.
func (s *Store) Path() string { return s.path }

// Postgres reports whether the history is in PostgreSQL.
func (s *Store) Postgres() bool { return s.db.d.postgres }

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// Check runs SQLite's integrity check (on SQLite) and looks for points
// without a run, and returns an error naming the first problem it finds.
func (s *Store) Check() error {
	// PostgreSQL checks its own storage (amcheck verifies it): what is
	// left is the history's own consistency.
	if !s.db.d.postgres {
		var res string
		if err := s.db.QueryRow("PRAGMA integrity_check").Scan(&res); err != nil {
			return fmt.Errorf("check results history: %w", err)
		}
		if res != "ok" {
			return fmt.Errorf("results history %s is damaged: %s", s.path, res)
		}
	}
	var orphans int
	if err := s.db.QueryRow("SELECT count(*) FROM points WHERE run_id NOT IN (SELECT id FROM runs)").Scan(&orphans); err != nil {
		return fmt.Errorf("check results history: %w", err)
	}
	if orphans > 0 {
		return fmt.Errorf("results history %s has %d points without a run", s.path, orphans)
	}
	return nil
}

// Backup writes a consistent copy of the history to dst (which must not
// exist), while other processes may be writing to it.
func (s *Store) Backup(dst string) error {
	if s.db.d.postgres {
		return fmt.Errorf("back up results history %s: it is in PostgreSQL; back it up with pg_dump (docs/server.md)", s.path)
	}
	if _, err := os.Stat(dst); err == nil {
		return fmt.Errorf("back up results history: %s exists", dst)
	} else if !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("back up results history: %w", err)
	}
	if _, err := s.db.Exec("VACUUM INTO ?", dst); err != nil {
		return fmt.Errorf("back up results history to %s: %w", dst, err)
	}
	return nil
}
