package history

import (
	"database/sql"
	"fmt"
	"time"

	"github.com/xrun-dev/xrun/client/flat"
	"github.com/xrun-dev/xrun/result"
)

// LongSeriesExperiment is the experiment of LongSeries' runs.
const LongSeriesExperiment = "long"

// LongSeriesJob is the job id of LongSeries' run i (0 the first).
func LongSeriesJob(i int) string { return fmt.Sprintf("long%07d", i) }

// LongSeries fills the empty history at path (a file or a postgres://
// URL) with one series of n timings: n runs a minute apart, each of one
// implementation at one case, with the kept samples, throughput and clock
// readings of a real run. The first run is imported as a results.json is
// (Import); the others are copies of it made by the database in
// two statements (a row each of runs and points, the median moved by up
// to 2 % from run to run), so that 10^6 timings take seconds, not the
// hours of 10^6 imports. It returns the last run's job id. It builds histories for the
// history's and the server's benchmarks, too large to make by importing
// runs one by one.
func LongSeries(path string, n int) (string, error) {
	start := time.Date(2025, 1, 1, 2, 0, 0, 0, time.UTC)
	r := flat.Synthetic(1, 1, LongSeriesJob(0), start, 1)
	r.Experiment = LongSeriesExperiment
	delete(r.Cases[0].Results, result.Reference)
	h, err := Open(path)
	if err != nil {
		return "", err
	}
	if _, err := h.Import(r, Source{Origin: "longseries"}); err != nil {
		h.Close()
		return "", err
	}
	postgres := h.Postgres()
	h.Close()
	if n <= 1 {
		return LongSeriesJob(0), nil
	}
	driver, dsn := "sqlite", "file:"+path
	if postgres {
		driver, dsn = "pgx", path
	}
	db, err := sql.Open(driver, dsn)
	if err != nil {
		return "", err
	}
	defer db.Close()
	runColumns := `job_id, experiment, at, status, mode, host, address, gpu, gpu_uuid, driver, cuda, torch, git_commit, source,
		imported_at, baseline`
	pointColumns := `impl_status, error, q1_ms, q3_ms, clock, samples, converged, throttled, host_busy, tflops, gbps,
		pct_peak_flops, pct_peak_bw, intensity, bound, speedup, verdict, kept, autotune, sm_clock_mhz, max_sm_clock_mhz, power_w,
		clock_readings, clock_reasons, slowdown`
	minute := time.Minute.Nanoseconds()
	// The copies' job ids, starts and run keys, from the first run's row;
	// then a point of each copy from the first run's point.
	copyRuns := `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
		INSERT INTO runs (run_key, ` + runColumns + `)
		SELECT printf('long%07d|%d', n.i, r.at + n.i * ?), printf('long%07d', n.i), r.experiment, r.at + n.i * ?, r.status, r.mode,
			r.host, r.address, r.gpu, r.gpu_uuid, r.driver, r.cuda, r.torch, r.git_commit, r.source, r.imported_at, r.baseline
		FROM n, runs r WHERE r.job_id = ?`
	copyPoints := `INSERT INTO points (run_id, series_id, median_ms, ` + pointColumns + `)
		SELECT c.id, p.series_id, p.median_ms * (0.99 + 0.02 * ((c.id * 7919) % 1000) / 1000.0), ` + prefixed("p.", pointColumns) + `
		FROM runs c, runs r JOIN points p ON p.run_id = r.id WHERE r.job_id = ? AND c.experiment = r.experiment AND c.id != r.id`
	args := []any{n - 1, minute, minute, LongSeriesJob(0)}
	if postgres {
		copyRuns = `INSERT INTO runs (run_key, ` + runColumns + `)
			SELECT format('long%s|%s', lpad(n::text, 7, '0'), r.at + n * $2), 'long' || lpad(n::text, 7, '0'), r.experiment,
				r.at + n * $3, r.status, r.mode, r.host, r.address, r.gpu, r.gpu_uuid, r.driver, r.cuda, r.torch, r.git_commit,
				r.source, r.imported_at, r.baseline
			FROM generate_series(1, $1::bigint) n, runs r WHERE r.job_id = $4`
		copyPoints = `INSERT INTO points (run_id, series_id, median_ms, ` + pointColumns + `)
			SELECT c.id, p.series_id, p.median_ms * (0.99 + 0.02 * ((c.id * 7919) % 1000) / 1000.0), ` + prefixed("p.", pointColumns) + `
			FROM runs c, runs r JOIN points p ON p.run_id = r.id WHERE r.job_id = $1 AND c.experiment = r.experiment AND c.id != r.id`
	}
	tx, err := db.Begin()
	if err != nil {
		return "", err
	}
	defer tx.Rollback()
	if _, err := tx.Exec(copyRuns, args...); err != nil {
		return "", fmt.Errorf("copy the runs: %v", err)
	}
	if _, err := tx.Exec(copyPoints, LongSeriesJob(0)); err != nil {
		return "", fmt.Errorf("copy the points: %v", err)
	}
	if err := tx.Commit(); err != nil {
		return "", err
	}
	if postgres {
		// The planner's statistics, as autovacuum would gather them in a
		// minute: the readers are timed at once.
		if _, err := db.Exec("ANALYZE"); err != nil {
			return "", err
		}
	}
	return LongSeriesJob(n - 1), nil
}

// prefixed is the comma-separated columns each with prefix.
func prefixed(prefix, columns string) string {
	var out []byte
	field := true
	for i := 0; i < len(columns); i++ {
		c := columns[i]
		switch {
		case c == ',' || c == ' ' || c == '\t' || c == '\n':
			field = true
		case field:
			out = append(out, prefix...)
			field = false
		}
		out = append(out, c)
	}
	return string(out)
}
