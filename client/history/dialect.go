package history

import (
	"context"
	"database/sql"
	"strconv"
	"strings"
)

// dialect is what differs between the databases the history runs on: the
// embedded SQLite of one machine, and PostgreSQL for a team's server
// (xrun serve --db postgres://...). The queries are written once, in the
// dialect both share (ON CONFLICT, RETURNING), with SQLite's ?
// placeholders; the few statements that cannot be shared ask the dialect.
type dialect struct {
	postgres bool
}

// rebind turns the ? placeholders of q into PostgreSQL's $1, $2, ...; a ?
// inside a quoted string is left alone.
func (d dialect) rebind(q string) string {
	if !d.postgres || !strings.Contains(q, "?") {
		return q
	}
	var b strings.Builder
	b.Grow(len(q) + 16)
	n, quoted := 0, false
	for i := 0; i < len(q); i++ {
		c := q[i]
		switch {
		case c == '\'':
			quoted = !quoted
		case c == '?' && !quoted:
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// idList is a subquery of the ids in one JSON array parameter: one
// parameter, not one per id, as SQLite allows 32,766 in a statement and
// PostgreSQL 65,535, and an experiment can have more series.
func (d dialect) idList() string {
	if d.postgres {
		return "SELECT value::bigint FROM json_array_elements_text(?::json)"
	}
	return "SELECT value FROM json_each(?)"
}

// textList is idList for strings: a subquery of the values of one JSON
// array parameter.
func (d dialect) textList() string {
	if d.postgres {
		return "SELECT value FROM json_array_elements_text(?::json)"
	}
	return "SELECT value FROM json_each(?)"
}

// Reads of a series' points run by run. A kept state's tail and a table's
// last runs are a few runs of a series that can have 10^6 points: the
// database must go from the runs (by experiment and time) to each run's
// point of the series, never through the series' points. SQLite's CROSS
// JOIN keeps the order written; PostgreSQL orders joins by its statistics,
// and took the series' index (all 10^6 points, 1.1 s) where one series
// held most of the points, so its points are a LATERAL subquery there,
// read run by run (OFFSET 0: not merged back into a join). The arguments
// are in the same order in both.

// tailQuery reads pointColumns of the runs of an experiment from a time
// on, of the series in one JSON array (arguments: experiment, time, ids).
func (d dialect) tailQuery() string {
	if d.postgres {
		return `SELECT ` + pointColumns + ` FROM runs r CROSS JOIN LATERAL (SELECT * FROM points q WHERE q.run_id = r.id
			AND q.series_id IN (SELECT value::bigint FROM json_array_elements_text($3::json)) OFFSET 0) p
			JOIN series s ON s.id = p.series_id WHERE r.experiment = $1 AND r.at >= $2`
	}
	return `SELECT ` + pointColumns + ` FROM runs r CROSS JOIN points p CROSS JOIN series s
		WHERE r.experiment = ? AND r.at >= ? AND p.run_id = r.id AND p.series_id IN (SELECT value FROM json_each(?)) AND s.id = p.series_id`
}

// lastRunsQuery reads the id and time of the last runs of one series
// (arguments: experiment, series id, how many), the latest first.
func (d dialect) lastRunsQuery() string {
	if d.postgres {
		return `SELECT r.id, r.at FROM runs r CROSS JOIN LATERAL (SELECT 1 FROM points q WHERE q.run_id = r.id AND q.series_id = $2
			OFFSET 0) p WHERE r.experiment = $1 ORDER BY r.at DESC, r.id DESC LIMIT $3`
	}
	return `SELECT r.id, r.at FROM runs r CROSS JOIN points p WHERE r.experiment = ? AND p.run_id = r.id AND p.series_id = ?
		ORDER BY r.at DESC, r.id DESC LIMIT ?`
}

// walkTable is the name of the walk's temporary table, and the statements
// that make it and index it: each database names its temporary schema its
// own way.
func (d dialect) walkTable() (name string, create []string) {
	if d.postgres {
		return "pg_temp.walk", []string{"DROP TABLE IF EXISTS pg_temp.walk",
			"CREATE TEMP TABLE walk (id BIGINT PRIMARY KEY, grp BIGINT NOT NULL)"}
	}
	return "temp.walk", []string{"DROP TABLE IF EXISTS temp.walk",
		"CREATE TEMP TABLE walk (id INTEGER PRIMARY KEY, grp INTEGER NOT NULL)"}
}

// walkIndex indexes the walk's table by group.
func (d dialect) walkIndex() string {
	if d.postgres {
		return "CREATE INDEX walk_grp ON pg_temp.walk(grp, id)"
	}
	return "CREATE INDEX temp.walk_grp ON walk(grp, id)"
}

// lockImport makes the imports of one experiment wait for each other. On
// SQLite every import's transaction is immediate, so they queue already;
// PostgreSQL's run side by side, and two that add the same new series, or
// the same run, would have the second fail on the unique key: a lock
// taken in the transaction, released at its end, orders them instead.
func (d dialect) lockImport(t *tx, experiment string) error {
	if !d.postgres {
		return nil
	}
	_, err := t.Exec("SELECT pg_advisory_xact_lock(hashtext('xrun-import'), hashtext(?))", experiment)
	return err
}

// db is a database/sql handle whose statements are written in SQLite's
// dialect and rebound for the database underneath. It has only the
// methods the history uses, so that no statement reaches the database
// without being rebound.
type db struct {
	sql *sql.DB
	d   dialect
}

func (x *db) Query(q string, args ...any) (*sql.Rows, error) {
	return x.sql.Query(x.d.rebind(q), args...)
}
func (x *db) QueryRow(q string, args ...any) *sql.Row { return x.sql.QueryRow(x.d.rebind(q), args...) }
func (x *db) Exec(q string, args ...any) (sql.Result, error) {
	return x.sql.Exec(x.d.rebind(q), args...)
}
func (x *db) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	return x.sql.QueryContext(ctx, x.d.rebind(q), args...)
}
func (x *db) Begin() (*tx, error) { return x.BeginTx(context.Background(), nil) }
func (x *db) BeginTx(ctx context.Context, opts *sql.TxOptions) (*tx, error) {
	t, err := x.sql.BeginTx(ctx, opts)
	if err != nil {
		return nil, err
	}
	return &tx{tx: t, d: x.d}, nil
}
func (x *db) Conn(ctx context.Context) (*conn, error) {
	c, err := x.sql.Conn(ctx)
	if err != nil {
		return nil, err
	}
	return &conn{c: c, d: x.d}, nil
}
func (x *db) Close() error { return x.sql.Close() }

// tx is a transaction of db.
type tx struct {
	tx *sql.Tx
	d  dialect
}

func (t *tx) Exec(q string, args ...any) (sql.Result, error) {
	return t.tx.Exec(t.d.rebind(q), args...)
}
func (t *tx) Query(q string, args ...any) (*sql.Rows, error) {
	return t.tx.Query(t.d.rebind(q), args...)
}
func (t *tx) QueryRow(q string, args ...any) *sql.Row { return t.tx.QueryRow(t.d.rebind(q), args...) }
func (t *tx) Prepare(q string) (*sql.Stmt, error)     { return t.tx.Prepare(t.d.rebind(q)) }
func (t *tx) PrepareContext(ctx context.Context, q string) (*sql.Stmt, error) {
	return t.tx.PrepareContext(ctx, t.d.rebind(q))
}
func (t *tx) Commit() error   { return t.tx.Commit() }
func (t *tx) Rollback() error { return t.tx.Rollback() }

// conn is one connection of db, for what must stay on one (a temporary
// table).
type conn struct {
	c *sql.Conn
	d dialect
}

func (c *conn) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	return c.c.ExecContext(ctx, c.d.rebind(q), args...)
}
func (c *conn) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	return c.c.QueryContext(ctx, c.d.rebind(q), args...)
}
func (c *conn) BeginTx(ctx context.Context, opts *sql.TxOptions) (*tx, error) {
	t, err := c.c.BeginTx(ctx, opts)
	if err != nil {
		return nil, err
	}
	return &tx{tx: t, d: c.d}, nil
}
func (c *conn) Close() error { return c.c.Close() }
