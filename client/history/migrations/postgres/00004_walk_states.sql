-- The rules' state kept with the history (client/history/walkstate.go):
-- each group of series' regress.State at one of its runs, so that a reader
-- of its last runs judges them from there; and each experiment's epoch,
-- which every change to what a state rests on moves.

-- +goose Up
CREATE TABLE walk_states (
	grp        TEXT PRIMARY KEY,
	experiment TEXT NOT NULL,
	rule       TEXT NOT NULL,
	at         BIGINT NOT NULL,
	run_id     BIGINT NOT NULL,
	state      TEXT NOT NULL
);
CREATE INDEX walk_states_experiment ON walk_states(experiment, at);
CREATE TABLE walk_epochs (
	experiment TEXT PRIMARY KEY,
	epoch      BIGINT NOT NULL
);

-- +goose Down
DROP TABLE walk_epochs;
DROP TABLE walk_states;
