package server

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/xrun-dev/xrun/client/history"
)

// The scopes of a token: what its holder may do.
const (
	// ScopePost may post results and nothing else: the token a runner
	// carries into every job, where whoever runs code in the job can read
	// it.
	ScopePost = "post"
	// ScopeRead may read the history and nothing else: dashboards, CI.
	ScopeRead = "read"
	// ScopeAdmin may do all of it.
	ScopeAdmin = "admin"
)

// Scopes are the scopes a token may have.
var Scopes = []string{ScopePost, ScopeRead, ScopeAdmin}

// tokenPrefix starts every token, so that a secret scanner (and a person)
// can tell one in a file or a log.
const tokenPrefix = "xrun_"

var tokenName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// NewToken makes a token of scope named name, records the hash of its
// secret in h, and returns the secret: the only time it is seen.
func NewToken(h *history.Store, name, scope string) (string, error) {
	if !tokenName.MatchString(name) {
		return "", fmt.Errorf("token name %q: use 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit", name)
	}
	if !validScope(scope) {
		return "", fmt.Errorf("scope %q: give one of %s", scope, strings.Join(Scopes, ", "))
	}
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("make token: %w", err)
	}
	secret := tokenPrefix + base64.RawURLEncoding.EncodeToString(b)
	if err := h.AddToken(name, hashToken(secret), scope); err != nil {
		if errors.Is(err, history.ErrTokenExists) {
			return "", fmt.Errorf("a token named %s exists: remove it first (xrun serve token rm %s) or pick another name", name, name)
		}
		return "", err
	}
	return secret, nil
}

func validScope(scope string) bool {
	for _, s := range Scopes {
		if s == scope {
			return true
		}
	}
	return false
}

// hashToken is what the history keeps of a secret: its SHA-256. A secret
// is 256 random bits, so a fast hash is enough (no salt, no key
// stretching: there is no dictionary to guard against), and a lookup by
// hash compares no secret byte by byte.
func hashToken(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// allows reports whether a token of scope may do what need names.
func allows(scope, need string) bool {
	return scope == ScopeAdmin || scope == need
}
