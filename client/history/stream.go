package history

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"

	"github.com/xrun-dev/xrun/client/regress"
)

// The readers of a large history (xrun history, regress) judge it one
// group of series at a time (a group: the implementations of one case on
// one kind of machine, which the relative rule reads together), so that
// what they hold is one group's points, not the history's: reading every
// point at once, and naming the series in an IN list, took gigabytes at
// 10^6 points and failed on SQLite's limit on a statement's variables.

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
	return s.walk(ctx, p, ru, func(js []Judged, _ map[int64]int) error { return fn(js) })
}

// walk judges the series p picks and their groups' others, group by
// group, and calls fn with each group's judged points of the picked
// series; it then keeps the rules' state where it read far enough
// (walkstate.go).
//
// fn gets, with each group's judged points, how many points of each picked
// series come before the first it shows (p.from), judged but not handed on.
func (s *Store) walk(ctx context.Context, p pick, ru regress.Rule, fn func([]Judged, map[int64]int) error) error {
	saves, epochs, err := s.walkGroups(ctx, p, ru, fn)
	if err != nil {
		return err
	}
	// A state not kept costs the next walk time, never a verdict: a
	// history that cannot be written now (a read-only copy, a full disk,
	// another process writing) is read all the same.
	if err := s.saveCheckpoints(ctx, ru, saves, epochs); err != nil && !IsStorage(err) && !isBusy(err) {
		return err
	}
	return nil
}

func (s *Store) walkGroups(ctx context.Context, p pick, ru regress.Rule, fn func([]Judged, map[int64]int) error) ([]newCheckpoint, map[string]int64, error) {
	// The groups of the picked series, from the series table (small
	// beside the points): each series' group, and each group's first id.
	groups := map[string]int64{}
	groupOf := map[int64]string{}
	refs := walkRefs{series: map[int64]*seriesRef{}}
	// A group is of one experiment: the series of the picked series'
	// experiments are read, not every series of the history (a run at the
	// case cap adds 110,000), an experiment at a time through its index.
	ids := make([]int64, 0, len(p.series))
	for id := range p.series {
		ids = append(ids, id)
	}
	list, _ := json.Marshal(ids)
	rows, err := s.db.QueryContext(ctx, `SELECT DISTINCT experiment FROM series WHERE id IN (`+s.db.d.idList()+`)`, string(list))
	if err != nil {
		return nil, nil, fmt.Errorf("read results history: %w", err)
	}
	var experiments []string
	for rows.Next() {
		var e string
		if err := rows.Scan(&e); err != nil {
			rows.Close()
			return nil, nil, fmt.Errorf("read results history: %w", err)
		}
		experiments = append(experiments, e)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, nil, fmt.Errorf("read results history: %w", err)
	}
	for _, e := range experiments {
		rows, err := s.db.QueryContext(ctx, `SELECT id, experiment, case_label, params, implementation, gpu, driver, cuda, stack,
			clock_policy, mode FROM series WHERE experiment = ? ORDER BY id`, e)
		if err != nil {
			return nil, nil, fmt.Errorf("read results history: %w", err)
		}
		for rows.Next() {
			var id int64
			var k Key
			if err := rows.Scan(&id, &k.Experiment, &k.Case, &k.Params, &k.Implementation, &k.GPU, &k.Driver, &k.CUDA, &k.Stack,
				&k.ClockPolicy, &k.Mode); err != nil {
				rows.Close()
				return nil, nil, fmt.Errorf("read results history: %w", err)
			}
			g := k.Group()
			groupOf[id] = g
			if _, ok := groups[g]; !ok {
				groups[g] = id
			}
			refs.series[id] = &seriesRef{key: k}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, nil, fmt.Errorf("read results history: %w", err)
		}
	}
	wanted := map[string]bool{}
	for id := range p.series {
		wanted[groupOf[id]] = true
	}
	members := map[string][]int64{}
	for id := range refs.series {
		if g := groupOf[id]; wanted[g] {
			members[g] = append(members[g], id)
		} else {
			delete(refs.series, id)
		}
	}
	changes, err := s.ChangePoints()
	if err != nil {
		return nil, nil, err
	}
	cps, epochs, err := s.loadCheckpoints(ctx, ru, wanted)
	if err != nil {
		return nil, nil, err
	}
	var saves []newCheckpoint
	judge := func(g string, points []Point, cp *checkpoint) error {
		judged, before, next, err := judgeGroup(points, changes, ru, p, cp)
		if err != nil {
			return err
		}
		// A state later than this walk's stays: regress of an old run
		// must not send the next table back to that run.
		if kept := cps[g]; next != nil && (kept == nil || kept.pos.before(next.pos)) {
			next.experiment = refs.series[groups[g]].key.Experiment
			saves = append(saves, newCheckpoint{group: g, cp: next})
		}
		if len(judged) == 0 {
			return nil
		}
		return fn(judged, before)
	}
	// The groups a kept state serves are read from it, first (a few runs
	// each), and judged in their turn among the others, by first id.
	resume := map[string]*checkpoint{}
	for g, cp := range cps {
		if p.resumable(cp, members[g]) {
			resume[g] = cp
		}
	}
	tails, err := s.readTails(ctx, resume, members, groupOf, p)
	if err != nil {
		return nil, nil, err
	}
	s.resumed.Add(int64(len(resume)))
	var resumed []string
	for g := range resume {
		resumed = append(resumed, g)
	}
	slices.SortFunc(resumed, func(a, b string) int { return cmp.Compare(groups[a], groups[b]) })
	// next judges the resumed groups whose first id comes before first.
	next := func(first int64) error {
		for len(resumed) > 0 && groups[resumed[0]] < first {
			g := resumed[0]
			resumed = resumed[1:]
			if err := judge(g, tails[g], resume[g]); err != nil {
				return err
			}
		}
		return nil
	}
	// The other groups are read from their start, in order of their
	// first id, the resumed ones judged among them in their turn.
	whole := map[int64]int64{} // series -> its group's first id
	for id, g := range groupOf {
		if wanted[g] && resume[g] == nil {
			whole[id] = groups[g]
		}
	}
	if len(whole) > 0 {
		if refs.runs, err = s.walkRuns(ctx, experiments); err != nil {
			return nil, nil, err
		}
		err = s.readWhole(ctx, whole, refs, p, func(group []Point) error {
			g := groupOf[group[0].SeriesID]
			if err := next(groups[g]); err != nil {
				return err
			}
			return judge(g, group, nil)
		})
		if err != nil {
			return nil, nil, err
		}
	}
	if err := next(math.MaxInt64); err != nil {
		return nil, nil, err
	}
	return saves, epochs, nil
}

// judgeGroup applies ru to one group's series (as Points orders them),
// from cp (the group's kept state, before every one of points; nil: from
// the group's start), and returns the judged points of the series p picks
// (from the first it shows, p.from, with how many come before it),
// and the group's state to keep when the walk read far enough past cp
// (checkpointAt; else nil).
func judgeGroup(points []Point, changes map[int64][]ChangePoint, ru regress.Rule, p pick, cp *checkpoint) ([]Judged, map[int64]int, *checkpoint, error) {
	series := Series(points)
	states := make([]*regress.State, len(series))
	lastAt := make([]int64, len(series))
	for i, ser := range series {
		states[i], lastAt[i] = cp.stateOf(ser[0].SeriesID)
		// The kept samples serve the rank test of a value against the
		// last of at least MinHistory before it: a series read from its
		// start and no longer than that never reads them, and most of a
		// walk's read was decoding them.
		for k := range ser {
			if cp != nil || len(ser) > ru.MinHistory {
				if err := decodeKept(&ser[k], ser[k].keptJSON); err != nil {
					return nil, nil, nil, err
				}
			}
			ser[k].keptJSON = ""
		}
	}
	// walk judges one stretch of each series (parts[i] of series i), from
	// and to states.
	walk := func(parts [][]Point) ([][]regress.Verdict, []*regress.Outcome) {
		in := make([]regress.Series, len(series))
		for i, part := range parts {
			var after []ChangePoint
			for _, c := range changes[series[i][0].SeriesID] {
				if c.At.UnixNano() > lastAt[i] {
					after = append(after, c)
				}
			}
			in[i] = regress.Series{Group: series[i][0].Key.Group(), Implementation: series[i][0].Key.Implementation,
				Values: valuesFrom(states[i], part, after)}
			if len(part) > 0 {
				lastAt[i] = part[len(part)-1].Date.UnixNano()
			}
		}
		return ru.WalkRelativeFrom(states, in)
	}
	var verdicts [][]regress.Verdict
	var next *checkpoint
	if at, ok := checkpointAt(points, cp, p); ok {
		// Judged in two stretches, to keep the state between them: what
		// the second makes of a suspect the first left waiting is set on
		// it, so the verdicts are the whole walk's.
		heads, tails := make([][]Point, len(series)), make([][]Point, len(series))
		for i, ser := range series {
			k := 0
			for k < len(ser) && !at.before(posOf(&ser[k])) {
				k++
			}
			heads[i], tails[i] = ser[:k], ser[k:]
		}
		first, _ := walk(heads)
		next = &checkpoint{pos: at, series: map[int64]*seriesState{}}
		if cp != nil {
			for id, st := range cp.series {
				next.series[id] = st
			}
		}
		for i, ser := range series {
			var st seriesState
			data, _ := json.Marshal(states[i])
			json.Unmarshal(data, &st.State)
			st.LastAt = lastAt[i]
			st.Points = len(heads[i])
			if cp != nil && cp.series[ser[0].SeriesID] != nil {
				st.Points += cp.series[ser[0].SeriesID].Points
			}
			next.series[ser[0].SeriesID] = &st
		}
		second, outcomes := walk(tails)
		verdicts = make([][]regress.Verdict, len(series))
		for i := range series {
			if o := outcomes[i]; o != nil {
				for k := len(heads[i]) - 1; k >= 0; k-- {
					if heads[i][k].JobID == o.Run {
						o.Apply(&first[i][k])
						break
					}
				}
			}
			verdicts[i] = append(first[i], second[i]...)
		}
	} else {
		// What these values make of a suspect the state left waiting
		// concerns a value before cp: none that the walk shows.
		verdicts, _ = walk(series)
	}
	var out []Judged
	before := map[int64]int{}
	for i, ser := range series {
		id := ser[0].SeriesID
		if !p.series[id] {
			continue
		}
		if cp != nil && cp.series[id] != nil {
			before[id] = cp.series[id].Points
		}
		// The points before the first the walk shows are judged, not
		// handed on: regress of the last run of a series of 10^6 points
		// copied every one of them.
		from, cut := p.from[id]
		for k := range ser {
			if cut && posOf(&ser[k]).before(from) {
				before[id]++
				continue
			}
			out = append(out, Judged{Point: ser[k], Verdict: verdicts[i][k]})
		}
	}
	return out, before, next, nil
}

// checkpointAt is where a walk of points (a group's, from cp) keeps the
// group's state: checkpointKeep runs before the last it judged, or before
// the first point it shows when that is earlier (so that the same walk
// next time starts there), when that leaves more than checkpointKeep runs
// between cp and it.
func checkpointAt(points []Point, cp *checkpoint, p pick) (runPos, bool) {
	if checkpointKeep < 1 {
		return runPos{}, false
	}
	seen := map[runPos]bool{}
	var at []runPos
	first, shows := runPos{}, false
	for i := range points {
		q := posOf(&points[i])
		if from, ok := p.from[points[i].SeriesID]; ok && (!shows || from.before(first)) {
			first, shows = from, true
		}
		if (cp != nil && !cp.pos.before(q)) || (p.cut != 0 && p.cutPos.before(q)) || seen[q] {
			continue
		}
		seen[q] = true
		at = append(at, q)
	}
	slices.SortFunc(at, func(a, b runPos) int { return cmp.Or(cmp.Compare(a.at, b.at), cmp.Compare(a.run, b.run)) })
	k := len(at) - checkpointKeep - 1
	for shows && k >= 0 && !at[k].before(first) {
		k--
	}
	if k < checkpointKeep {
		return runPos{}, false
	}
	return at[k], true
}

// judgeRun is JudgeEach, read group by group: fn gets the verdict on
// each point of the run (the job's last) against its series up to it.
func (s *Store) judgeRun(ctx context.Context, run Run, ru regress.Rule, fn func(Judged)) error {
	ids, err := s.seriesIDs(ctx, "SELECT series_id FROM points WHERE run_id = ?", run.ID)
	if err != nil {
		return err
	}
	p := pick{series: ids, cut: run.ID, cutPos: runPos{run.At.UnixNano(), run.ID}, from: map[int64]runPos{}}
	for id := range ids {
		p.from[id] = p.cutPos
	}
	return s.walk(ctx, p, ru, func(js []Judged, _ map[int64]int) error {
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

// PointCounts is how many points each run of experiment has, by run id:
// what a reader of the walk's points of a run can make room for, and how
// large a run's page is, before the walk.
func (s *Store) PointCounts(ctx context.Context, experiment string) (map[int64]int, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT p.run_id, count(*) FROM points p JOIN runs r ON r.id = p.run_id
		WHERE r.experiment = ? GROUP BY p.run_id`, experiment)
	if err != nil {
		return nil, fmt.Errorf("read results history: %w", err)
	}
	defer rows.Close()
	counts := map[int64]int{}
	for rows.Next() {
		var id int64
		var n int
		if err := rows.Scan(&id, &n); err != nil {
			return nil, fmt.Errorf("read results history: %w", err)
		}
		counts[id] = n
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read results history: %w", err)
	}
	return counts, nil
}
