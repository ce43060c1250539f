package history

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/xrun-dev/xrun/client/regress"
)

// What a walk shows: the series and points a reader's filter picks, and
// where each series' shown points begin, which decides whether a kept
// state (walkstate.go) can serve the walk.

// Pick chooses what a walk judges and shows, from the light columns of
// every point of the history.
type pick struct {
	// series are the series picked: they are judged, with their groups'
	// other series.
	series map[int64]bool
	// cut, when not nil, ends a picked series at its point of that run
	// (the points after it are neither judged nor shown), which lies at
	// cutPos.
	cut    int64
	cutPos runPos
	// from is, by picked series, the first of its points the walk shows:
	// a group whose kept state (walkstate.go) lies before every one of
	// them is judged from there. nil: the walk shows every point, and
	// judges every group from its start.
	from map[int64]runPos
}

// resumable reports whether cp can serve a walk of p over the group of
// members: it lies before the cut and before every point the walk shows.
func (p pick) resumable(cp *checkpoint, members []int64) bool {
	if p.from == nil || (p.cut != 0 && !cp.pos.before(p.cutPos)) {
		return false
	}
	for _, id := range members {
		if !p.series[id] {
			continue
		}
		from, ok := p.from[id]
		if !ok || !cp.pos.before(from) {
			return false
		}
	}
	return true
}

// WalkFilter judges the series that f picks, each with the other series
// of its group. It first calls start with how many points f picks and
// what their parameters are named (for a CSV's columns); then, unless
// start returns an error or there are none, fn with each group's judged
// points of the picked series (whole) and those of them f picks (shown),
// in the order of the groups' first series, each series in time order.
//
// With last > 0 only the last `last` points f picks of each series are
// shown, earlier counts by series those left out, and whole may begin
// after a series' first point: a series of 10^6 points is judged from the
// rules' state kept before its last ones (walkstate.go), not read whole.
func (s *Store) WalkFilter(ctx context.Context, f Filter, ru regress.Rule, last int, start func(points int, params []string) error,
	fn func(whole, shown []Judged, earlier map[int64]int) error) error {
	pk, err := s.pickLast(ctx, f, last)
	if err == errPickAll {
		pk, err = s.pickAll(ctx, f, last)
	}
	if err != nil {
		return err
	}
	if err := start(pk.points, pk.params); err != nil || pk.points == 0 {
		return err
	}
	return s.walk(ctx, pk.pick, ru, func(whole []Judged, before map[int64]int) error {
		var shown []Judged
		for _, j := range whole {
			if pk.shown[[2]int64{j.SeriesID, j.RunID}] {
				shown = append(shown, j)
			}
		}
		if pk.fromWalk {
			return fn(whole, shown, before)
		}
		return fn(whole, shown, pk.earlier)
	})
}

// picked is what WalkFilter shows: the walk's pick, the points shown (by
// series and run), how many points f picks, their parameters' names, and
// how many earlier points of each series are left out (or fromWalk: the
// walk counts them, as every point of the series is picked).
type picked struct {
	pick
	shown    map[[2]int64]bool
	points   int
	params   []string
	earlier  map[int64]int
	fromWalk bool
}

func (pk *picked) add(series, run int64, at runPos) {
	if !pk.series[series] {
		pk.series[series] = true
	}
	pk.shown[[2]int64{series, run}] = true
	if from, ok := pk.from[series]; !ok || at.before(from) {
		pk.from[series] = at
	}
}

func newPicked() *picked {
	return &picked{pick: pick{series: map[int64]bool{}, from: map[int64]runPos{}}, shown: map[[2]int64]bool{}, earlier: map[int64]int{}}
}

// errPickAll is pickLast's answer where it cannot pick: pickAll does.
var errPickAll = errors.New("pick from every point")

// maxPickLast is the most series pickLast looks up one by one; more are
// picked in pickAll's one pass.
const maxPickLast = 200

// pickLast picks the last `last` points of each series f picks, looking
// each series' last runs up by the runs' time: no point before them is
// read. It answers errPickAll where f filters points by their run (host,
// GPU, since), shows every point (last 0), or picks many series.
func (s *Store) pickLast(ctx context.Context, f Filter, last int) (*picked, error) {
	if last <= 0 || f.Host != "" || f.GPU != "" || !f.Since.IsZero() {
		return nil, errPickAll
	}
	where, args := f.seriesWhere(s.db.d, "", "id")
	q := "SELECT id, experiment, params FROM series"
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	rows, err := s.db.QueryContext(ctx, q+" ORDER BY id", args...)
	if err != nil {
		return nil, fmt.Errorf("read results history: %w", err)
	}
	type one struct {
		id         int64
		experiment string
	}
	var series []one
	names := map[string]bool{}
	for rows.Next() {
		var o one
		var ps string
		if err := rows.Scan(&o.id, &o.experiment, &ps); err != nil {
			rows.Close()
			return nil, fmt.Errorf("read results history: %w", err)
		}
		pt := Point{}
		if err := json.Unmarshal([]byte(ps), &pt.Params); err != nil {
			rows.Close()
			return nil, fmt.Errorf("read results history: series %d: %w", o.id, err)
		}
		if !f.matches(&pt) {
			continue
		}
		if len(series) == maxPickLast {
			rows.Close()
			return nil, errPickAll
		}
		series = append(series, o)
		for k := range pt.Params {
			names[k] = true
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read results history: %w", err)
	}
	pk := newPicked()
	// The points before those shown are counted by the walk (a count of
	// the series' points took a third of a second on PostgreSQL at 10^6).
	pk.fromWalk = true
	for _, o := range series {
		// The experiment's runs from the latest back, through their
		// index, each probed for the series.
		rows, err := s.db.QueryContext(ctx, s.db.d.lastRunsQuery(), o.experiment, o.id, last)
		if err != nil {
			return nil, fmt.Errorf("read results history: %w", err)
		}
		for rows.Next() {
			var run, at int64
			if err := rows.Scan(&run, &at); err != nil {
				rows.Close()
				return nil, fmt.Errorf("read results history: %w", err)
			}
			pk.add(o.id, run, runPos{at, run})
			pk.points++
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("read results history: %w", err)
		}
	}
	pk.params = slices.Sorted(maps.Keys(names))
	return pk, nil
}

// pickAll picks from the light columns of every point of the history the
// points f picks (with last > 0, each series' last `last` of them).
func (s *Store) pickAll(ctx context.Context, f Filter, last int) (*picked, error) {
	pk := newPicked()
	paramNames := map[string]bool{}
	q := `SELECT p.series_id, p.run_id, r.at, s.params, r.host, r.address, s.gpu, r.gpu_uuid
		FROM points p JOIN runs r ON r.id = p.run_id JOIN series s ON s.id = p.series_id`
	where, args := f.where(s.db.d)
	rows, err := s.db.QueryContext(ctx, q+where, args...)
	if err != nil {
		return nil, fmt.Errorf("read results history: %w", err)
	}
	defer rows.Close()
	params := map[int64]map[string]any{}
	bySeries := map[int64][]runPos{}
	for rows.Next() {
		var pt Point
		var ps string
		var at int64
		if err := rows.Scan(&pt.SeriesID, &pt.RunID, &at, &ps, &pt.Host, &pt.Address, &pt.GPU, &pt.GPUUUID); err != nil {
			return nil, fmt.Errorf("read results history: %w", err)
		}
		pm, ok := params[pt.SeriesID]
		if !ok {
			if err := json.Unmarshal([]byte(ps), &pm); err != nil {
				return nil, fmt.Errorf("read results history: series %d: %w", pt.SeriesID, err)
			}
			params[pt.SeriesID] = pm
		}
		pt.Params = pm
		if !f.matches(&pt) {
			continue
		}
		if !pk.series[pt.SeriesID] {
			for k := range pm {
				paramNames[k] = true
			}
		}
		pk.points++
		if last > 0 {
			pk.series[pt.SeriesID] = true
			bySeries[pt.SeriesID] = append(bySeries[pt.SeriesID], runPos{at, pt.RunID})
			continue
		}
		pk.add(pt.SeriesID, pt.RunID, runPos{at, pt.RunID})
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read results history: %w", err)
	}
	for id, ps := range bySeries {
		slices.SortFunc(ps, func(a, b runPos) int { return cmp.Or(cmp.Compare(a.at, b.at), cmp.Compare(a.run, b.run)) })
		if len(ps) > last {
			pk.earlier[id] = len(ps) - last
			ps = ps[len(ps)-last:]
		}
		for _, q := range ps {
			pk.add(id, q.run, q)
		}
	}
	if last == 0 {
		// Every point shown, and every point handed on whole (a figure
		// of each series draws them all, --since or not): judged from
		// the start.
		pk.from = nil
	}
	pk.params = slices.Sorted(maps.Keys(paramNames))
	return pk, nil
}

// where is the part of f SQL applies (the rest is matches'), for Points and
// WalkFilter alike.
func (f Filter) where(d dialect) (string, []any) {
	where, args := f.seriesWhere(d, "s.", "p.series_id")
	if !f.Since.IsZero() {
		where, args = append(where, "r.at >= ?"), append(args, f.Since.UnixNano())
	}
	if len(where) == 0 {
		return "", nil
	}
	return " WHERE " + strings.Join(where, " AND "), args
}

// seriesWhere is the part of f that picks series: the series table's
// columns under prefix, its id as id.
func (f Filter) seriesWhere(d dialect, prefix, id string) ([]string, []any) {
	var where []string
	var args []any
	if f.Experiment != "" {
		where, args = append(where, prefix+"experiment = ?"), append(args, f.Experiment)
	}
	if f.Implementation != "" {
		where, args = append(where, prefix+"implementation = ?"), append(args, f.Implementation)
	}
	if f.Job != "" {
		where = append(where, id+" IN (SELECT q.series_id FROM points q JOIN runs u ON u.id = q.run_id WHERE u.job_id = ?)")
		args = append(args, f.Job)
	}
	if len(f.Series) > 0 {
		ids, _ := json.Marshal(f.Series)
		where, args = append(where, id+" IN ("+d.idList()+")"), append(args, string(ids))
	}
	return where, args
}
