package history

import (
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Token is a server's access token as the history keeps it: its name, its
// scope and when it was made. The secret itself is never stored, only its
// hash (xrun serve makes both).
type Token struct {
	Name    string    `json:"name"`
	Scope   string    `json:"scope"`
	Created time.Time `json:"created"`
}

// ErrTokenExists is AddToken's error for a name already taken.
var ErrTokenExists = errors.New("a token of that name exists")

// AddToken records a token by the hash of its secret.
func (s *Store) AddToken(name, hash, scope string) error {
	res, err := s.db.Exec("INSERT INTO tokens (name, hash, scope, created_at) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
		name, hash, scope, time.Now().UnixNano())
	if err != nil {
		return fmt.Errorf("add token %s: %w", name, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("add token %s: %w", name, ErrTokenExists)
	}
	return nil
}

// TokenByHash returns the token whose secret has hash; ok is false when
// there is none.
func (s *Store) TokenByHash(hash string) (t Token, ok bool, err error) {
	var created int64
	err = s.db.QueryRow("SELECT name, scope, created_at FROM tokens WHERE hash = ?", hash).Scan(&t.Name, &t.Scope, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return Token{}, false, nil
	}
	if err != nil {
		return Token{}, false, fmt.Errorf("read tokens: %w", err)
	}
	t.Created = time.Unix(0, created).UTC()
	return t, true, nil
}

// Tokens returns the tokens by name.
func (s *Store) Tokens() ([]Token, error) {
	rows, err := s.db.Query("SELECT name, scope, created_at FROM tokens ORDER BY name")
	if err != nil {
		return nil, fmt.Errorf("read tokens: %w", err)
	}
	defer rows.Close()
	out := []Token{}
	for rows.Next() {
		var t Token
		var created int64
		if err := rows.Scan(&t.Name, &t.Scope, &created); err != nil {
			return nil, fmt.Errorf("read tokens: %w", err)
		}
		t.Created = time.Unix(0, created).UTC()
		out = append(out, t)
	}
	return out, rows.Err()
}

// RemoveToken removes the token name, and reports whether there was one.
func (s *Store) RemoveToken(name string) (bool, error) {
	// Its browsers are signed out (each request checks the token too).
	if _, err := s.db.Exec("DELETE FROM sessions WHERE token_hash IN (SELECT hash FROM tokens WHERE name = ?)", name); err != nil {
		return false, fmt.Errorf("remove token %s: %w", name, err)
	}
	res, err := s.db.Exec("DELETE FROM tokens WHERE name = ?", name)
	if err != nil {
		return false, fmt.Errorf("remove token %s: %w", name, err)
	}
	n, _ := res.RowsAffected()
	return n > 0, nil
}
