package history

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"time"
)

// A walk's reads: the groups read from their start (readWhole), those
// read from a kept state on (readTails), and the rows they are made of.

// readWhole reads every point of the series whole names (each with its
// group's first id), and calls each with each group's points as
// readGroups orders them, in order of the groups' first ids.
func (s *Store) readWhole(ctx context.Context, whole map[int64]int64, refs walkRefs, p pick, each func([]Point) error) error {
	// The series, each with its group's first id, in a temporary table of
	// this connection (the store has one) that the points are read
	// through, in group order.
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("read results history: %w", err)
	}
	defer conn.Close()
	walkTable, create := s.db.d.walkTable()
	for _, q := range create {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("read results history: %w", err)
		}
	}
	defer conn.ExecContext(context.Background(), create[0])
	// One transaction: a statement each, 110000 of them for a run at the
	// case cap, took half a second.
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("read results history: %w", err)
	}
	ins, err := tx.PrepareContext(ctx, "INSERT INTO "+walkTable+" (id, grp) VALUES (?, ?)")
	if err != nil {
		tx.Rollback()
		return fmt.Errorf("read results history: %w", err)
	}
	for id, first := range whole {
		if _, err := ins.ExecContext(ctx, id, first); err != nil {
			ins.Close()
			tx.Rollback()
			return fmt.Errorf("read results history: %w", err)
		}
	}
	ins.Close()
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("read results history: %w", err)
	}
	if _, err := conn.ExecContext(ctx, s.db.d.walkIndex()); err != nil {
		return fmt.Errorf("read results history: %w", err)
	}
	// A point's row holds its own columns: its series' and its run's are
	// refs', read once (with them, the rows were three times as wide). The
	// rows come in the walk table's index order, a series' points
	// together, and each group is put in time order as it is read
	// (readGroups): ordered by the run's time, SQLite sorted every point
	// of the walk, kept samples and all, before the first row.
	rows, err := conn.QueryContext(ctx, `SELECT w.grp, p.series_id, p.run_id, `+pointOwnColumns+` FROM `+walkTable+` w
		JOIN points p ON p.series_id = w.id ORDER BY w.grp, w.id`)
	if err != nil {
		return fmt.Errorf("read results history: %w", err)
	}
	// The rows are read on a goroutine of their own while the groups
	// read are judged on this one: on two CPUs a walk takes the longer of
	// the two rather than their sum.
	read := make(chan []Point, 4)
	rctx, stop := context.WithCancel(ctx)
	defer stop()
	var readErr error
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		defer close(read)
		defer rows.Close()
		readErr = readGroups(rctx, rows, refs, p, read)
	}()
	for group := range read {
		if err != nil {
			continue // draining, the reader stopped
		}
		if err = each(group); err != nil {
			stop()
		}
	}
	<-readDone
	if err == nil {
		err = readErr
	}
	return err
}

// readTails reads the points of the groups resume serves that come after
// their kept state: the runs of each experiment from its earliest state
// on, a point of each of the groups' series looked up in each run (an
// index's probe, where the series' index would read all of its points).
func (s *Store) readTails(ctx context.Context, resume map[string]*checkpoint, members map[string][]int64, groupOf map[int64]string,
	p pick) (map[string][]Point, error) {
	type tail struct {
		from int64
		ids  []int64
	}
	byExperiment := map[string]*tail{}
	for g, cp := range resume {
		t := byExperiment[cp.experiment]
		if t == nil {
			t = &tail{from: cp.pos.at}
			byExperiment[cp.experiment] = t
		}
		t.from = min(t.from, cp.pos.at)
		t.ids = append(t.ids, members[g]...)
	}
	out := map[string][]Point{}
	for e, t := range byExperiment {
		ids, _ := json.Marshal(t.ids)
		rows, err := s.db.QueryContext(ctx, s.db.d.tailQuery(), e, t.from, string(ids))
		if err != nil {
			return nil, fmt.Errorf("read results history: %w", err)
		}
		for rows.Next() {
			pt, err := scanPoint(rows, -1)
			if err != nil {
				rows.Close()
				return nil, err
			}
			g := groupOf[pt.SeriesID]
			if resume[g].pos.before(posOf(&pt)) {
				out[g] = append(out[g], pt)
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("read results history: %w", err)
		}
	}
	for g, group := range out {
		out[g] = orderGroup(group, p)
	}
	return out, nil
}

// readGroups reads a walk's rows into groups of points, each group's
// series in time order, a series of p's that reached p.cut ending there,
// and sends each group whole.
func readGroups(ctx context.Context, rows *sql.Rows, refs walkRefs, p pick, out chan<- []Point) error {
	var group []Point
	grp := int64(-1)
	send := func() error {
		if len(group) == 0 {
			return nil
		}
		group = orderGroup(group, p)
		select {
		case out <- group:
			group = nil
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	for rows.Next() {
		var g int64
		pt, err := refs.point(rows, &g)
		if err != nil {
			return err
		}
		if g != grp {
			if err := send(); err != nil {
				return err
			}
			grp = g
		}
		group = append(group, pt)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read results history: %w", err)
	}
	return send()
}

// orderGroup puts a group's points in order, each series' in time order,
// and ends p's series at p.cut.
func orderGroup(group []Point, p pick) []Point {
	slices.SortFunc(group, func(a, b Point) int {
		if a.SeriesID != b.SeriesID {
			return cmp.Compare(a.SeriesID, b.SeriesID)
		}
		if c := a.Date.Compare(b.Date); c != 0 {
			return c
		}
		return cmp.Compare(a.RunID, b.RunID)
	})
	if p.cut != 0 {
		group = cutAt(group, p)
	}
	return group
}

// cutAt drops from a group in time order the points of p's series that
// come after their point of run p.cut.
func cutAt(group []Point, p pick) []Point {
	kept := group[:0]
	cut := int64(-1) // the series that has reached the cut
	for _, pt := range group {
		if p.series[pt.SeriesID] {
			if cut == pt.SeriesID {
				continue // past the run
			}
			if pt.RunID == p.cut {
				cut = pt.SeriesID
			}
		}
		kept = append(kept, pt)
	}
	return kept
}

// pointColumns are the columns scanPoint reads: the series', the run's,
// then the point's own (pointOwnColumns).
const pointColumns = `p.series_id, s.experiment, s.case_label, s.params, s.implementation, s.gpu, s.driver, s.cuda, s.stack,
		s.clock_policy, s.mode, ` + runColumns + `, ` + pointOwnColumns

// runColumns are a run's columns that its points carry (scanRun's).
const runColumns = `r.id, r.job_id, r.at, r.status, r.host, r.address, r.gpu_uuid, r.driver, r.cuda, r.torch, r.git_commit,
		r.source, r.baseline`

// pointOwnColumns are a point's own columns (pointDest's).
const pointOwnColumns = `p.impl_status, p.error, p.median_ms, p.q1_ms, p.q3_ms, p.clock, p.samples, p.converged,
		p.throttled, p.host_busy, p.tflops, p.gbps, p.pct_peak_flops, p.pct_peak_bw, p.intensity, p.bound, p.speedup, p.verdict, p.kept,
		p.autotune, p.sm_clock_mhz, p.max_sm_clock_mhz, p.power_w, p.clock_readings, p.clock_reasons, p.slowdown`

type scanner interface{ Scan(dest ...any) error }

// runDest are the destinations of runColumns in p (at: the run's time,
// which the caller sets as p.Date).
func runDest(p *Point, at *int64) []any {
	return []any{&p.RunID, &p.JobID, at, &p.Status, &p.Host, &p.Address, &p.GPUUUID, &p.Driver, &p.CUDA, &p.Torch, &p.Commit,
		&p.Source, &p.Baseline}
}

// pointDest are the destinations of pointOwnColumns in p (kept: the kept
// samples' JSON, which the caller decodes).
func pointDest(p *Point, kept *string) []any {
	return []any{&p.ImplStatus, &p.Error, &p.MedianMS, &p.Q1MS, &p.Q3MS, &p.Clock, &p.Samples, &p.Converged, &p.Throttled,
		&p.HostBusy, &p.TFLOPS, &p.GBps, &p.PctPeakFlops, &p.PctPeakBW, &p.Intensity, &p.Bound, &p.Speedup, &p.Verdict, kept,
		&p.Autotune, &p.SMClockMHz, &p.MaxSMClockMHz, &p.PowerW, &p.ClockReadings, &p.ClockReasons, &p.Slowdown}
}

// setKey sets p's series key and the columns it names.
func (p *Point) setKey(k Key, params map[string]any) {
	p.Key, p.Params = k, params
	p.Experiment, p.Case, p.Implementation, p.GPU, p.Mode = k.Experiment, k.Case, k.Implementation, k.GPU, k.Mode
	p.Stack, p.ClockPolicy = k.Stack, k.ClockPolicy
}

// decodeKept decodes a point's kept samples ("" or null: none).
func decodeKept(p *Point, kept string) error {
	if kept == "" || kept == "null" {
		return nil
	}
	if err := json.Unmarshal([]byte(kept), &p.KeptSamples); err != nil {
		return fmt.Errorf("read results history: series %d: %w", p.SeriesID, err)
	}
	return nil
}

// walkRefs are the series and runs a walk's points belong to, read once:
// a point's row then carries its own columns alone, and the points of a
// series or a run share its strings (most of a point's memory) and its
// decoded parameters.
type walkRefs struct {
	series map[int64]*seriesRef
	runs   map[int64]*Point
}

// seriesRef is a series of a walk: its key, and its parameters, decoded
// at its first point.
type seriesRef struct {
	key    Key
	params map[string]any
	read   bool
}

// walkRuns reads the columns that their points carry of every run of
// experiments.
func (s *Store) walkRuns(ctx context.Context, experiments []string) (map[int64]*Point, error) {
	runs := map[int64]*Point{}
	for _, e := range experiments {
		rows, err := s.db.QueryContext(ctx, `SELECT `+runColumns+` FROM runs r WHERE r.experiment = ?`, e)
		if err != nil {
			return nil, fmt.Errorf("read results history: %w", err)
		}
		for rows.Next() {
			r := &Point{}
			var at int64
			if err := rows.Scan(runDest(r, &at)...); err != nil {
				rows.Close()
				return nil, fmt.Errorf("read results history: %w", err)
			}
			r.Date = time.Unix(0, at).UTC()
			runs[r.RunID] = r
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("read results history: %w", err)
		}
	}
	return runs, nil
}

// point reads a walk's row (the columns of first, then series id, run id
// and pointOwnColumns) into a point of its series and run.
func (w walkRefs) point(rows scanner, first ...any) (Point, error) {
	var p Point
	var kept string
	dest := append(append(first, &p.SeriesID, &p.RunID), pointDest(&p, &kept)...)
	if err := rows.Scan(dest...); err != nil {
		return p, fmt.Errorf("read results history: %w", err)
	}
	ser, run := w.series[p.SeriesID], w.runs[p.RunID]
	if ser == nil || run == nil {
		return p, fmt.Errorf("read results history: point of series %d, run %d: the history changed while it was read", p.SeriesID, p.RunID)
	}
	if !ser.read {
		if err := json.Unmarshal([]byte(ser.key.Params), &ser.params); err != nil {
			return p, fmt.Errorf("read results history: series %d: %w", p.SeriesID, err)
		}
		ser.read = true
	}
	p.setKey(ser.key, ser.params)
	p.JobID, p.Date, p.Status, p.Host, p.Address, p.GPUUUID, p.Driver = run.JobID, run.Date, run.Status, run.Host, run.Address, run.GPUUUID, run.Driver
	p.CUDA, p.Torch, p.Commit, p.Source, p.Baseline = run.CUDA, run.Torch, run.Commit, run.Source, run.Baseline
	p.keptJSON = kept
	return p, nil
}

// scanPoint reads a row of pointColumns; the parameters of a point of
// series same are left to the caller.
func scanPoint(rows scanner, same int64) (Point, error) {
	var p Point
	var k Key
	var kept string
	var at int64
	dest := []any{&p.SeriesID, &k.Experiment, &k.Case, &k.Params, &k.Implementation, &k.GPU, &k.Driver, &k.CUDA, &k.Stack,
		&k.ClockPolicy, &k.Mode}
	dest = append(append(dest, runDest(&p, &at)...), pointDest(&p, &kept)...)
	if err := rows.Scan(dest...); err != nil {
		return p, fmt.Errorf("read results history: %w", err)
	}
	p.setKey(k, nil)
	p.Date = time.Unix(0, at).UTC()
	if p.SeriesID != same {
		if err := json.Unmarshal([]byte(k.Params), &p.Params); err != nil {
			return p, fmt.Errorf("read results history: series %d: %w", p.SeriesID, err)
		}
	}
	return p, decodeKept(&p, kept)
}
