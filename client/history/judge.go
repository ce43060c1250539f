package history

import (
	"fmt"

	"github.com/xrun-dev/xrun/client/regress"
)

// Judged is a point with the rule's verdict on it.
type Judged struct {
	Point
	Verdict regress.Verdict `json:"verdict"`
}

// Walk applies ru to every series of points (as Points returns them, whole
// series) with their change points, and returns each point judged.
func (s *Store) Walk(points []Point, ru regress.Rule) ([]Judged, error) {
	var ids []int64
	for _, ser := range Series(points) {
		ids = append(ids, ser[0].SeriesID)
	}
	if len(ids) == 0 {
		return nil, nil
	}
	changes, err := s.ChangePoints(ids...)
	if err != nil {
		return nil, err
	}
	out := make([]Judged, 0, len(points))
	for _, ser := range Series(points) {
		vs := ru.Walk(Values(ser, changes[ser[0].SeriesID]))
		for i, p := range ser {
			out = append(out, Judged{Point: p, Verdict: vs[i]})
		}
	}
	return out, nil
}

// Judge returns the verdict on each point of job's run against the values
// of its series up to it (later runs left out, so an old run is judged as
// it was that night; its suspects show as suspects even where a later run
// confirmed them).
func (s *Store) Judge(job string, ru regress.Rule) ([]Judged, error) {
	runs, err := s.RunsOfJob(job)
	if err != nil {
		return nil, err
	}
	if len(runs) == 0 {
		return nil, fmt.Errorf("job %s is not in the results history (xrun history import PATH adds a results.json)", job)
	}
	run := runs[len(runs)-1]
	points, err := s.Points(Filter{Job: job})
	if err != nil {
		return nil, err
	}
	// Keep each series up to and including the run.
	var upTo []Point
	for _, ser := range Series(points) {
		last := -1
		for i, p := range ser {
			if p.RunID == run.ID {
				last = i
			}
		}
		if last >= 0 {
			upTo = append(upTo, ser[:last+1]...)
		}
	}
	all, err := s.Walk(upTo, ru)
	if err != nil {
		return nil, err
	}
	var out []Judged
	for _, j := range all {
		if j.RunID == run.ID {
			out = append(out, j)
		}
	}
	return out, nil
}
