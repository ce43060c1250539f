package history

import (
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// The dashboard's sign-in sessions of xrun serve, kept with the history so
// that a restart of the server (an upgrade, a new container) does not sign
// its browsers out. A session is kept by the hash of its cookie's value and
// names its token by the token's hash: neither secret is stored.

// AddSession records the session whose cookie value hashes to id, signed
// in with the token whose secret hashes to token, until expires; sessions
// past their time go.
func (s *Store) AddSession(id, token string, expires time.Time) error {
	if _, err := s.db.Exec("DELETE FROM sessions WHERE expires_at < ?", time.Now().UnixNano()); err != nil {
		return fmt.Errorf("remove expired sessions: %w", err)
	}
	if _, err := s.db.Exec("INSERT INTO sessions (id, token_hash, expires_at) VALUES (?, ?, ?)", id, token, expires.UnixNano()); err != nil {
		return fmt.Errorf("add a session: %w", err)
	}
	return nil
}

// SessionToken returns the hash of the token of session id; ok is false
// when there is no such session or it has expired.
func (s *Store) SessionToken(id string) (token string, ok bool, err error) {
	err = s.db.QueryRow("SELECT token_hash FROM sessions WHERE id = ? AND expires_at >= ?", id, time.Now().UnixNano()).Scan(&token)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("read sessions: %w", err)
	}
	return token, true, nil
}

// RemoveSession ends session id.
func (s *Store) RemoveSession(id string) error {
	if _, err := s.db.Exec("DELETE FROM sessions WHERE id = ?", id); err != nil {
		return fmt.Errorf("remove a session: %w", err)
	}
	return nil
}
