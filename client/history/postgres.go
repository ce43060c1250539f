package history

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	_ "github.com/jackc/pgx/v5/stdlib" // the database/sql driver "pgx"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"

	"github.com/xrun-dev/xrun/internal/post"
)

// migrations are the history's layouts on PostgreSQL, applied in order by
// goose, which records the last it applied in goose_db_version. A layout
// change is a new numbered file here, never an edit of an applied one.
//
//go:embed migrations/postgres/*.sql
var migrations embed.FS

// IsURL reports whether where names a PostgreSQL database
// (postgres://... or postgresql://...) rather than an SQLite file.
func IsURL(where string) bool {
	return strings.HasPrefix(where, "postgres://") || strings.HasPrefix(where, "postgresql://")
}

// maxPostgresConns is how many connections a history on PostgreSQL opens
// at most: a server's posts and reads run side by side, and the database
// serves other clients too.
const maxPostgresConns = 16

// openPostgres opens the history in the PostgreSQL database at dsn and
// brings its layout up to date. Several servers starting at once apply a
// migration once: goose holds an advisory lock while it migrates.
func openPostgres(dsn string) (*Store, error) {
	safe := post.Redact(dsn)
	sdb, err := sql.Open("pgx", dsn)
	if err != nil {
		return nil, fmt.Errorf("open results history %s: %v", safe, scrubDSN(err, dsn))
	}
	sdb.SetMaxOpenConns(maxPostgresConns)
	ctx := context.Background()
	if err := sdb.PingContext(ctx); err != nil {
		sdb.Close()
		return nil, fmt.Errorf("open results history %s: %v (is PostgreSQL running there, and are the user and password right?)", safe, scrubDSN(err, dsn))
	}
	fsys, err := fs.Sub(migrations, "migrations/postgres")
	if err != nil {
		sdb.Close()
		return nil, fmt.Errorf("open results history %s: %w", safe, err)
	}
	locker, err := lock.NewPostgresSessionLocker()
	if err != nil {
		sdb.Close()
		return nil, fmt.Errorf("open results history %s: %w", safe, err)
	}
	p, err := goose.NewProvider(goose.DialectPostgres, sdb, fsys, goose.WithSessionLocker(locker))
	if err != nil {
		sdb.Close()
		return nil, fmt.Errorf("open results history %s: %w", safe, err)
	}
	if _, err := p.Up(ctx); err != nil {
		sdb.Close()
		return nil, fmt.Errorf("upgrade the layout of results history %s: %v", safe, scrubDSN(err, dsn))
	}
	// A layout newer than this xrun's has what this xrun would not keep
	// true (the rules' kept state, which every import must update).
	if current, latest, err := p.GetVersions(ctx); err != nil {
		sdb.Close()
		return nil, fmt.Errorf("read the layout of results history %s: %v", safe, scrubDSN(err, dsn))
	} else if current > latest {
		sdb.Close()
		return nil, fmt.Errorf("the results history %s has layout %d; this xrun reads %d (use a newer xrun)", safe, current, latest)
	}
	return &Store{db: &db{sql: sdb, d: dialect{postgres: true}}, path: safe}, nil
}

// scrubDSN drops the password of dsn from err's text, should a driver's
// message repeat the connection string.
func scrubDSN(err error, dsn string) error {
	msg := err.Error()
	if i := strings.Index(dsn, "://"); i >= 0 {
		if at := strings.Index(dsn[i+3:], "@"); at >= 0 {
			if userinfo := dsn[i+3 : i+3+at]; strings.Contains(userinfo, ":") {
				pw := userinfo[strings.Index(userinfo, ":")+1:]
				if pw != "" {
					msg = strings.ReplaceAll(msg, pw, "[password]")
				}
			}
		}
	}
	return errors.New(msg)
}

// isPostgresStorage reports whether err is PostgreSQL's: the server could
// not be reached, or is short of disk, memory or connections (classes 08,
// 53, 57 and 58 of its error codes).
func isPostgresStorage(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code[:2] {
		case "08", "53", "57", "58":
			return true
		}
		return false
	}
	var ce *pgconn.ConnectError
	return errors.As(err, &ce) || pgconn.SafeToRetry(err)
}

// IsRefused reports whether err is the database refusing a value of the
// input that the results' bounds let through: PostgreSQL's data
// exceptions (class 22), such as a NUL character in a text, which its
// text type cannot hold and SQLite's can. Such a run cannot be stored
// there however often it is posted.
func IsRefused(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && strings.HasPrefix(pe.Code, "22")
}
