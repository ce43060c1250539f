-- The history's layout on PostgreSQL: the tables of SQLite's layout 5
-- (store.go), with PostgreSQL's types (BIGINT times in nanoseconds,
-- DOUBLE PRECISION figures, BOOLEAN flags), and the server's tokens.

-- +goose Up
CREATE TABLE series (
	id             BIGSERIAL PRIMARY KEY,
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
CREATE INDEX series_experiment ON series(experiment);
CREATE TABLE runs (
	id          BIGSERIAL PRIMARY KEY,
	run_key     TEXT NOT NULL UNIQUE,
	job_id      TEXT NOT NULL,
	experiment  TEXT NOT NULL,
	at          BIGINT NOT NULL,
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
	imported_at BIGINT NOT NULL,
	baseline    TEXT NOT NULL DEFAULT ''
);
CREATE INDEX runs_job ON runs(job_id);
CREATE INDEX runs_experiment ON runs(experiment, at);
CREATE TABLE points (
	run_id           BIGINT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
	series_id        BIGINT NOT NULL REFERENCES series(id),
	impl_status      TEXT NOT NULL,
	error            TEXT NOT NULL,
	median_ms        DOUBLE PRECISION NOT NULL,
	q1_ms            DOUBLE PRECISION NOT NULL,
	q3_ms            DOUBLE PRECISION NOT NULL,
	clock            TEXT NOT NULL,
	samples          BIGINT NOT NULL,
	converged        BOOLEAN NOT NULL,
	throttled        BOOLEAN NOT NULL,
	host_busy        BOOLEAN NOT NULL DEFAULT FALSE,
	tflops           DOUBLE PRECISION NOT NULL,
	gbps             DOUBLE PRECISION NOT NULL,
	pct_peak_flops   DOUBLE PRECISION NOT NULL,
	pct_peak_bw      DOUBLE PRECISION NOT NULL,
	intensity        DOUBLE PRECISION NOT NULL,
	bound            TEXT NOT NULL,
	speedup          DOUBLE PRECISION NOT NULL,
	verdict          TEXT NOT NULL,
	kept             TEXT NOT NULL,
	autotune         TEXT NOT NULL DEFAULT '',
	sm_clock_mhz     BIGINT NOT NULL DEFAULT 0,
	max_sm_clock_mhz BIGINT NOT NULL DEFAULT 0,
	power_w          DOUBLE PRECISION NOT NULL DEFAULT 0,
	clock_readings   BIGINT NOT NULL DEFAULT 0,
	clock_reasons    TEXT NOT NULL DEFAULT '',
	slowdown         TEXT NOT NULL DEFAULT '',
	PRIMARY KEY (run_id, series_id)
);
CREATE INDEX points_series ON points(series_id);
CREATE TABLE change_points (
	id         BIGSERIAL PRIMARY KEY,
	series_id  BIGINT NOT NULL REFERENCES series(id),
	at         BIGINT NOT NULL,
	job_id     TEXT NOT NULL,
	note       TEXT NOT NULL,
	created_at BIGINT NOT NULL,
	UNIQUE (series_id, at)
);
CREATE TABLE removed_jobs (
	job_id     TEXT PRIMARY KEY,
	removed_at BIGINT NOT NULL
);
CREATE TABLE reported (
	run_id      BIGINT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
	series_id   BIGINT NOT NULL,
	verdict     TEXT NOT NULL,
	reported_at BIGINT NOT NULL,
	PRIMARY KEY (run_id, series_id)
);
CREATE TABLE tokens (
	name       TEXT PRIMARY KEY,
	hash       TEXT NOT NULL UNIQUE,
	scope      TEXT NOT NULL,
	created_at BIGINT NOT NULL
);

-- +goose Down
DROP TABLE tokens;
DROP TABLE reported;
DROP TABLE removed_jobs;
DROP TABLE change_points;
DROP TABLE points;
DROP TABLE runs;
DROP TABLE series;
