-- The dashboard's sign-in sessions of xrun serve, so that a restart does
-- not sign its browsers out: each by the hash of its cookie's value, with
-- the hash of the token it signed in with.

-- +goose Up
CREATE TABLE sessions (
	id         TEXT PRIMARY KEY,
	token_hash TEXT NOT NULL,
	expires_at BIGINT NOT NULL
);

-- +goose Down
DROP TABLE sessions;
