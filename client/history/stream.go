package history

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/xrun-dev/xrun/client/regress"
)

// The readers of a large history (xrun history, regress) judge it one
// group of series at a time (a group: the implementations of one case on
// one kind of machine, which the relative rule reads together), so that
// what they hold is one group's points, not the history's: reading every
// point at once, and naming the series in an IN list, took gigabytes at
// 10^6 points and failed on SQLite's limit on a statement's variables.

// Pick chooses what a walk judges and shows, from the light columns of
// every point of the history.
type pick struct {
	// series are the series picked: they are judged, with their groups'
	// other series.
	series map[int64]bool
	// cut, when not nil, ends a picked series at its point of that run
	// (the points after it are neither judged nor shown).
	cut int64
}

// WalkFilter judges the series that f picks, each with the other series
// of its group. It first calls start with how many points f picks and
// what their parameters are named (for a CSV's columns); then, unless
// start returns an error or there are none, fn with each group's judged
// points of the picked series (whole) and those of them f picks (shown),
// in the order of the groups' first series, each series in time order.
func (s *Store) WalkFilter(ctx context.Context, f Filter, ru regress.Rule, start func(points int, params []string) error,
	fn func(whole, shown []Judged) error) error {
	p := pick{series: map[int64]bool{}}
	shown := map[[2]int64]bool{}
	paramNames := map[string]bool{}
	q := `SELECT p.series_id, p.run_id, s.params, r.host, r.address, s.gpu, r.gpu_uuid
		FROM points p JOIN runs r ON r.id = p.run_id JOIN series s ON s.id = p.series_id`
	where, args := f.where(s.db.d)
	rows, err := s.db.QueryContext(ctx, q+where, args...)
	if err != nil {
		return fmt.Errorf("read results history: %w", err)
	}
	params := map[int64]map[string]any{}
	for rows.Next() {
		var pt Point
		var ps string
		if err := rows.Scan(&pt.SeriesID, &pt.RunID, &ps, &pt.Host, &pt.Address, &pt.GPU, &pt.GPUUUID); err != nil {
			rows.Close()
			return fmt.Errorf("read results history: %w", err)
		}
		pm, ok := params[pt.SeriesID]
		if !ok {
			if err := json.Unmarshal([]byte(ps), &pm); err != nil {
				rows.Close()
				return fmt.Errorf("read results history: series %d: %w", pt.SeriesID, err)
			}
			params[pt.SeriesID] = pm
		}
		pt.Params = pm
		if !f.matches(&pt) {
			continue
		}
		if !p.series[pt.SeriesID] {
			p.series[pt.SeriesID] = true
			for k := range pm {
				paramNames[k] = true
			}
		}
		shown[[2]int64{pt.SeriesID, pt.RunID}] = true
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read results history: %w", err)
	}
	names := make([]string, 0, len(paramNames))
	for k := range paramNames {
		names = append(names, k)
	}
	slices.Sort(names)
	if err := start(len(shown), names); err != nil || len(shown) == 0 {
		return err
	}
	show := func(j Judged) bool { return shown[[2]int64{j.SeriesID, j.RunID}] }
	return s.walk(ctx, p, ru, func(whole []Judged) error {
		var picked []Judged
		for _, j := range whole {
			if show(j) {
				picked = append(picked, j)
			}
		}
		return fn(whole, picked)
	})
}

// WalkExperiment judges every series of experiment, a group of series
// at a time, and calls fn with each group's judged points, each series in
// time order. It picks the series from the series table, not from a pass
// over every point as WalkFilter does: an experiment of 50000 series
// has 150000 points at three runs.
func (s *Store) WalkExperiment(ctx context.Context, experiment string, ru regress.Rule, fn func([]Judged) error) error {
	ids, err := s.seriesIDs(ctx, "SELECT id FROM series WHERE experiment = ?", experiment)
	if err != nil {
		return err
	}
	p := pick{series: ids}
	if len(p.series) == 0 {
		return nil
	}
	return s.walk(ctx, p, ru, fn)
}

// where is the part of f SQL applies (the rest is matches'), for Points and
// WalkFilter alike.
func (f Filter) where(d dialect) (string, []any) {
	var where []string
	var args []any
	if f.Experiment != "" {
		where, args = append(where, "s.experiment = ?"), append(args, f.Experiment)
	}
	if f.Implementation != "" {
		where, args = append(where, "s.implementation = ?"), append(args, f.Implementation)
	}
	if !f.Since.IsZero() {
		where, args = append(where, "r.at >= ?"), append(args, f.Since.UnixNano())
	}
	if f.Job != "" {
		where = append(where, "p.series_id IN (SELECT q.series_id FROM points q JOIN runs u ON u.id = q.run_id WHERE u.job_id = ?)")
		args = append(args, f.Job)
	}
	if len(f.Series) > 0 {
		ids, _ := json.Marshal(f.Series)
		where, args = append(where, "p.series_id IN ("+d.idList()+")"), append(args, string(ids))
	}
	if len(where) == 0 {
		return "", nil
	}
	return " WHERE " + strings.Join(where, " AND "), args
}

// walk judges the series p picks and their groups' others, group by
// group, and calls fn with each group's judged points of the picked
// series.
func (s *Store) walk(ctx context.Context, p pick, ru regress.Rule, fn func([]Judged) error) error {
	// The groups of the picked series, from the series table (small
	// beside the points): each series' group, and each group's first id.
	groups := map[string]int64{}
	groupOf := map[int64]string{}
	rows, err := s.db.QueryContext(ctx, `SELECT id, experiment, case_label, params, implementation, gpu, driver, cuda, stack,
		clock_policy, mode FROM series ORDER BY id`)
	if err != nil {
		return fmt.Errorf("read results history: %w", err)
	}
	for rows.Next() {
		var id int64
		var k Key
		if err := rows.Scan(&id, &k.Experiment, &k.Case, &k.Params, &k.Implementation, &k.GPU, &k.Driver, &k.CUDA, &k.Stack,
			&k.ClockPolicy, &k.Mode); err != nil {
			rows.Close()
			return fmt.Errorf("read results history: %w", err)
		}
		g := k.Group()
		groupOf[id] = g
		if _, ok := groups[g]; !ok {
			groups[g] = id
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read results history: %w", err)
	}
	wanted := map[string]bool{}
	for id := range p.series {
		wanted[groupOf[id]] = true
	}
	changes, err := s.ChangePoints()
	if err != nil {
		return err
	}
	// The walk's series, each with its group's first id, in a temporary
	// table of this connection (the store has one) that the points are
	// read through, in group order.
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
	for id, g := range groupOf {
		if wanted[g] {
			if _, err := ins.ExecContext(ctx, id, groups[g]); err != nil {
				ins.Close()
				tx.Rollback()
				return fmt.Errorf("read results history: %w", err)
			}
		}
	}
	ins.Close()
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("read results history: %w", err)
	}
	if _, err := conn.ExecContext(ctx, s.db.d.walkIndex()); err != nil {
		return fmt.Errorf("read results history: %w", err)
	}
	rows, err = conn.QueryContext(ctx, `SELECT w.grp, `+pointColumns+` FROM `+walkTable+` w JOIN points p ON p.series_id = w.id
		JOIN runs r ON r.id = p.run_id JOIN series s ON s.id = p.series_id ORDER BY w.grp, w.id, r.at, r.id`)
	if err != nil {
		return fmt.Errorf("read results history: %w", err)
	}
	defer rows.Close()
	var group []Point
	grp := int64(-1)
	cutAt := int64(-1) // the series that has reached the cut
	flush := func() error {
		if len(group) == 0 {
			return nil
		}
		judged := judgeGroup(group, changes, ru, p)
		group = group[:0]
		if len(judged) == 0 {
			return nil
		}
		return fn(judged)
	}
	var in interner
	for rows.Next() {
		var g int64
		pt, err := in.point(rows, &g)
		if err != nil {
			return err
		}
		if g != grp {
			if err := flush(); err != nil {
				return err
			}
			grp = g
		}
		if p.cut != 0 && p.series[pt.SeriesID] {
			if cutAt == pt.SeriesID {
				continue // past the run
			}
			if pt.RunID == p.cut {
				cutAt = pt.SeriesID
			}
		}
		group = append(group, pt)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read results history: %w", err)
	}
	return flush()
}

// judgeGroup applies ru to one group's series (as Points orders them)
// and returns the judged points of the series p picks.
func judgeGroup(points []Point, changes map[int64][]ChangePoint, ru regress.Rule, p pick) []Judged {
	series := Series(points)
	in := make([]regress.Series, len(series))
	for i, ser := range series {
		in[i] = regress.Series{Group: ser[0].Key.Group(), Implementation: ser[0].Key.Implementation,
			Values: Values(ser, changes[ser[0].SeriesID])}
	}
	verdicts := ru.WalkRelative(in)
	var out []Judged
	for i, ser := range series {
		if !p.series[ser[0].SeriesID] {
			continue
		}
		for k, pt := range ser {
			out = append(out, Judged{Point: pt, Verdict: verdicts[i][k]})
		}
	}
	return out
}

// pointColumns are the columns scanPoint reads.
const pointColumns = `p.series_id, s.experiment, s.case_label, s.params, s.implementation, s.gpu, s.driver, s.cuda, s.stack,
		s.clock_policy, s.mode, r.id, r.job_id, r.at, r.status, r.host, r.address, r.gpu_uuid, r.driver, r.cuda, r.torch,
		r.git_commit, r.source, r.baseline, p.impl_status, p.error, p.median_ms, p.q1_ms, p.q3_ms, p.clock, p.samples, p.converged,
		p.throttled, p.host_busy, p.tflops, p.gbps, p.pct_peak_flops, p.pct_peak_bw, p.intensity, p.bound, p.speedup, p.verdict, p.kept, p.autotune,
		p.sm_clock_mhz, p.max_sm_clock_mhz, p.power_w, p.clock_readings, p.clock_reasons, p.slowdown`

type scanner interface{ Scan(dest ...any) error }

// interner shares the strings of a walk's points: those of a series with
// its previous point, and those of a run among its points, so that a
// large run's judged points hold them once (they are what most of a
// point's memory is) and the series' parameters are decoded once.
type interner struct {
	prev Point
	runs map[int64]*Point
}

// point reads a row of pointColumns after the columns of first, sharing
// what it can with the points read before.
func (in *interner) point(rows scanner, first ...any) (Point, error) {
	p, err := scanPoint(rows, in.prev.SeriesID, first...)
	if err != nil {
		return p, err
	}
	if p.SeriesID == in.prev.SeriesID {
		p.Key, p.Params = in.prev.Key, in.prev.Params
		p.Experiment, p.Case, p.Implementation, p.GPU, p.Mode = p.Key.Experiment, p.Key.Case, p.Key.Implementation, p.Key.GPU, p.Key.Mode
		p.Stack, p.ClockPolicy = p.Key.Stack, p.Key.ClockPolicy
	}
	if in.runs == nil {
		in.runs = map[int64]*Point{}
	}
	if r, ok := in.runs[p.RunID]; ok {
		p.JobID, p.Status, p.Host, p.Address, p.GPUUUID, p.Driver = r.JobID, r.Status, r.Host, r.Address, r.GPUUUID, r.Driver
		p.CUDA, p.Torch, p.Commit, p.Source, p.Baseline = r.CUDA, r.Torch, r.Commit, r.Source, r.Baseline
	} else {
		r := p
		r.KeptSamples = nil
		in.runs[p.RunID] = &r
	}
	in.prev = p
	return p, nil
}

// scanPoint reads a row of pointColumns, after the columns of first; the
// parameters of a point of series same are left to the caller.
func scanPoint(rows scanner, same int64, first ...any) (Point, error) {
	var p Point
	var params, kept string
	var at int64
	dest := append(first, &p.SeriesID, &p.Key.Experiment, &p.Key.Case, &params, &p.Key.Implementation, &p.Key.GPU,
		&p.Key.Driver, &p.Key.CUDA, &p.Key.Stack, &p.Key.ClockPolicy, &p.Key.Mode, &p.RunID, &p.JobID, &at, &p.Status,
		&p.Host, &p.Address, &p.GPUUUID, &p.Driver, &p.CUDA, &p.Torch, &p.Commit, &p.Source, &p.Baseline, &p.ImplStatus, &p.Error,
		&p.MedianMS, &p.Q1MS, &p.Q3MS, &p.Clock, &p.Samples, &p.Converged, &p.Throttled, &p.HostBusy, &p.TFLOPS, &p.GBps,
		&p.PctPeakFlops, &p.PctPeakBW, &p.Intensity, &p.Bound, &p.Speedup, &p.Verdict, &kept, &p.Autotune,
		&p.SMClockMHz, &p.MaxSMClockMHz, &p.PowerW, &p.ClockReadings, &p.ClockReasons, &p.Slowdown)
	if err := rows.Scan(dest...); err != nil {
		return p, fmt.Errorf("read results history: %w", err)
	}
	p.Key.Params = params
	p.Experiment, p.Case, p.Implementation, p.GPU, p.Mode = p.Key.Experiment, p.Key.Case, p.Key.Implementation, p.Key.GPU, p.Key.Mode
	p.Stack, p.ClockPolicy = p.Key.Stack, p.Key.ClockPolicy
	p.Date = time.Unix(0, at).UTC()
	if p.SeriesID != same {
		if err := json.Unmarshal([]byte(params), &p.Params); err != nil {
			return p, fmt.Errorf("read results history: series %d: %w", p.SeriesID, err)
		}
	}
	if kept != "" && kept != "null" {
		if err := json.Unmarshal([]byte(kept), &p.KeptSamples); err != nil {
			return p, fmt.Errorf("read results history: series %d: %w", p.SeriesID, err)
		}
	}
	return p, nil
}

// judgeRun is JudgeEach, read group by group: fn gets the verdict on
// each point of the run (the job's last) against its series up to it.
func (s *Store) judgeRun(ctx context.Context, run Run, ru regress.Rule, fn func(Judged)) error {
	ids, err := s.seriesIDs(ctx, "SELECT series_id FROM points WHERE run_id = ?", run.ID)
	if err != nil {
		return err
	}
	p := pick{series: ids, cut: run.ID}
	return s.walk(ctx, p, ru, func(js []Judged) error {
		for _, j := range js {
			if j.RunID == run.ID {
				fn(j)
			}
		}
		return nil
	})
}

// seriesIDs is the set of series ids that query (one id column) gives.
func (s *Store) seriesIDs(ctx context.Context, query string, args ...any) (map[int64]bool, error) {
	rows, err := s.db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("read results history: %w", err)
	}
	defer rows.Close()
	ids := map[int64]bool{}
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("read results history: %w", err)
		}
		ids[id] = true
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read results history: %w", err)
	}
	return ids, nil
}
