-- The results.json of each job posted to xrun serve, gzip-compressed, for
-- the readers that need the whole run (xrun results, compare, the job's
-- page): the history's points hold one row per implementation and case.

-- +goose Up
CREATE TABLE results_files (
	job_id    TEXT PRIMARY KEY,
	body      BYTEA NOT NULL,
	stored_at BIGINT NOT NULL
);

-- +goose Down
DROP TABLE results_files;
