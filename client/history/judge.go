package history

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/xrun-dev/xrun/client/regress"
)

// Judged is a point with the rule's verdict on it.
type Judged struct {
	Point
	Verdict regress.Verdict `json:"verdict"`
}

// Walk applies ru to every series of points (as Points returns them, whole
// series) with their change points, and returns each point judged. The
// relative rule reads each series with the others of its group (the other
// implementations timed in the same runs at the same case): those the
// points lack are read from the history.
func (s *Store) Walk(points []Point, ru regress.Rule) ([]Judged, error) {
	var ids []int64
	for _, ser := range Series(points) {
		ids = append(ids, ser[0].SeriesID)
	}
	if len(ids) == 0 {
		return nil, nil
	}
	mates, err := s.mates(ids)
	if err != nil {
		return nil, err
	}
	all := points
	if len(mates) > 0 {
		more, err := s.Points(Filter{Series: mates})
		if err != nil {
			return nil, err
		}
		all = append(slices.Clone(points), more...)
	}
	series := Series(all)
	for _, ser := range series {
		if !slices.Contains(ids, ser[0].SeriesID) {
			ids = append(ids, ser[0].SeriesID)
		}
	}
	changes, err := s.ChangePoints(ids...)
	if err != nil {
		return nil, err
	}
	in := make([]regress.Series, len(series))
	for i, ser := range series {
		in[i] = regress.Series{Group: ser[0].Key.Group(), Implementation: ser[0].Key.Implementation,
			Values: Values(ser, changes[ser[0].SeriesID])}
	}
	verdicts := ru.WalkRelative(in)
	out := make([]Judged, 0, len(points))
	for i, ser := range series[:len(Series(points))] {
		for k, p := range ser {
			out = append(out, Judged{Point: p, Verdict: verdicts[i][k]})
		}
	}
	return out, nil
}

// mates returns the series of the groups of ids that are not in ids. It
// reads the series of the experiments of ids once and groups them here: a
// join of the series with themselves on the group's columns compares
// every pair, minutes for an experiment of 50000 series.
func (s *Store) mates(ids []int64) ([]int64, error) {
	// One JSON array, not a variable per series (Filter.where says why).
	list, _ := json.Marshal(ids)
	rows, err := s.db.Query(`SELECT id, experiment, params, gpu, driver, cuda, stack, clock_policy, mode FROM series
		WHERE experiment IN (SELECT DISTINCT experiment FROM series WHERE id IN (`+s.db.d.idList()+`)) ORDER BY id`, string(list))
	if err != nil {
		return nil, fmt.Errorf("read results history: %w", err)
	}
	defer rows.Close()
	type group [8]string
	var all []int64
	groupOf := map[int64]group{}
	for rows.Next() {
		var id int64
		var g group
		if err := rows.Scan(&id, &g[0], &g[1], &g[2], &g[3], &g[4], &g[5], &g[6], &g[7]); err != nil {
			return nil, fmt.Errorf("read results history: %w", err)
		}
		all, groupOf[id] = append(all, id), g
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read results history: %w", err)
	}
	in, groups := map[int64]bool{}, map[group]bool{}
	for _, id := range ids {
		in[id] = true
		if g, ok := groupOf[id]; ok {
			groups[g] = true
		}
	}
	var out []int64
	for _, id := range all {
		if !in[id] && groups[groupOf[id]] {
			out = append(out, id)
		}
	}
	return out, nil
}

// Judge returns the verdict on each point of job's run against the values
// of its series up to it (later runs left out, so an old run is judged as
// it was that night; its suspects show as suspects even where a later run
// confirmed them). The points come without their kept samples.
func (s *Store) Judge(job string, ru regress.Rule) ([]Judged, error) {
	var out []Judged
	err := s.JudgeEach(job, ru, func(j Judged) { out = append(out, j) })
	return out, err
}

// JudgeEach is Judge, calling fn with each judged point in turn instead of
// returning them: a run at the case cap has 110000, and a report that keeps
// a few fields of each need not hold them whole.
func (s *Store) JudgeEach(job string, ru regress.Rule, fn func(Judged)) error {
	runs, err := s.RunsOfJob(job)
	if err != nil {
		return err
	}
	if len(runs) == 0 {
		return fmt.Errorf("job %s is not in the results history (xrun history import PATH adds a results.json)", job)
	}
	// Read group by group: a large run's series, read whole with their
	// groups' others, held the history in memory.
	return s.judgeRun(context.Background(), runs[len(runs)-1], ru, func(j Judged) {
		j.KeptSamples = nil // judged: a report needs the verdicts, not the samples
		fn(j)
	})
}
