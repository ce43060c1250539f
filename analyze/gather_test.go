package analyze

import (
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/xrun-dev/xrun/result"
	"github.com/xrun-dev/xrun/spec"
)

// splitSpec is a spec of five cases, T=1..5, and one criterion on a's time.
func splitSpec(t *testing.T) *spec.Spec {
	t.Helper()
	var sw spec.Sweep
	if err := yaml.Unmarshal([]byte("T: [1, 2, 3, 4, 5]"), &sw); err != nil {
		t.Fatal(err)
	}
	return &spec.Spec{Name: "exp", Hash: "h1", Benchmark: spec.Benchmark{Sweep: sw},
		Criteria: []spec.Criterion{{Time: "a", BelowMS: 10}}}
}

// part is part k of n of splitSpec's sweep as its runner writes it: a
// takes T ms at case T.
func part(s *spec.Spec, k, n int, status string) *result.Results {
	r := &result.Results{SpecHash: s.Hash, Experiment: s.Name, Mode: "gpu", Status: status, Implementations: []string{"a"},
		Split: &result.Split{Part: k, Parts: n}}
	all := s.Benchmark.Cases(false)
	for i, p := range all {
		if i%n != k-1 {
			continue
		}
		ms := float64(i + 1)
		r.Cases = append(r.Cases, result.Case{Params: p.Map(), Label: p.Label(),
			Results: map[string]*result.ImplResult{"a": {Status: result.ImplOK, Timing: &result.Timing{MedianMS: ms, Samples: 10, Converged: true}}}})
	}
	return r
}

func jobsOf(n int) []result.SplitJob {
	var out []result.SplitJob
	for k := 1; k <= n; k++ {
		out = append(out, result.SplitJob{Part: k, JobID: "job" + string(rune('0'+k)), Host: "h", Status: result.StatusSucceeded})
	}
	return out
}

func labels(r *result.Results) string {
	var out []string
	for _, c := range r.Cases {
		out = append(out, c.Label)
	}
	return strings.Join(out, " ")
}

func TestGatherPutsTheSweepBackInOrder(t *testing.T) {
	s := splitSpec(t)
	// Each part alone passes the criterion on its own cases or fails it:
	// the gathered run is judged on all five.
	parts := []*result.Results{part(s, 1, 2, result.StatusSucceeded), part(s, 2, 2, result.StatusSucceeded)}
	r, err := Gather(s, "g1", parts, jobsOf(2))
	if err != nil {
		t.Fatal(err)
	}
	if got := labels(r); got != "T=1 T=2 T=3 T=4 T=5" {
		t.Errorf("cases %q, want T=1 .. T=5 in order", got)
	}
	if r.JobID != "g1" || r.Split == nil || r.Split.Part != 0 || r.Split.Parts != 2 || len(r.Split.Jobs) != 2 {
		t.Errorf("split = %+v, job %s", r.Split, r.JobID)
	}
	if r.Status != result.StatusSucceeded || !r.Success || len(r.Criteria) != 1 || !r.Criteria[0].Passed {
		t.Errorf("status %s, criteria %+v", r.Status, r.Criteria)
	}

	s.Criteria[0].BelowMS = 4.5 // T=5 takes 5 ms: part 1's case
	r, err = Gather(s, "g1", parts, jobsOf(2))
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != result.StatusCriteriaFailed || r.Criteria[0].Passed {
		t.Errorf("status %s, criteria %+v; want criteria_failed on T=5", r.Status, r.Criteria)
	}
}

func TestGatherOfACancelledPart(t *testing.T) {
	s := splitSpec(t)
	p2 := part(s, 2, 2, result.StatusCancelled)
	p2.Cases, p2.Error = p2.Cases[:1], "cancelled"
	r, err := Gather(s, "g1", []*result.Results{part(s, 1, 2, result.StatusSucceeded), p2}, jobsOf(2))
	if err != nil {
		t.Fatal(err)
	}
	if got := labels(r); got != "T=1 T=2 T=3 T=4 T=5" {
		t.Errorf("cases %q, want all five (T=4 not run)", got)
	}
	if ir := r.Cases[3].Results["a"]; ir == nil || ir.Status != result.ImplNotRun {
		t.Errorf("T=4, which part 2 never ran: %+v, want not_run", ir)
	}
	if r.Status != result.StatusCancelled || !strings.Contains(r.Error, "part 2/2 (job job2)") || !r.Criteria[0].NotEvaluated {
		t.Errorf("status %s, error %q, criteria %+v", r.Status, r.Error, r.Criteria)
	}

	// A part stopped before its first case read no machine: the run's is
	// the first part's that ran one.
	p1 := part(s, 1, 2, result.StatusCancelled)
	p1.Cases, p1.Error = nil, "cancelled"
	p2 = part(s, 2, 2, result.StatusSucceeded)
	p2.Env.Host = "node2"
	r, err = Gather(s, "g1", []*result.Results{p1, p2}, jobsOf(2))
	if err != nil {
		t.Fatal(err)
	}
	if r.Env.Host != "node2" || r.Status != result.StatusCancelled || len(r.Cases) != 5 {
		t.Errorf("env.host %q, status %s, %d cases; want part 2's host, cancelled, 5 cases", r.Env.Host, r.Status, len(r.Cases))
	}
}

func TestGatherRefusesWhatIsNotOneSweep(t *testing.T) {
	s := splitSpec(t)
	for name, c := range map[string]struct {
		parts []*result.Results
		want  string
	}{
		"out of order": {[]*result.Results{part(s, 2, 2, "succeeded"), part(s, 1, 2, "succeeded")}, "not part 1/2"},
		"whole sweep":  {[]*result.Results{{SpecHash: "h1"}, part(s, 2, 2, "succeeded")}, "it ran the whole sweep"},
		"another spec": {[]*result.Results{part(s, 1, 2, "succeeded"), func() *result.Results { p := part(s, 2, 2, "succeeded"); p.SpecHash = "h2"; return p }()}, "another version"},
		"too many cases": {[]*result.Results{part(s, 1, 2, "succeeded"), func() *result.Results {
			p := part(s, 2, 2, "succeeded")
			p.Cases = append(p.Cases, p.Cases...)
			return p
		}()}, "ran another sweep"},
	} {
		if _, err := Gather(s, "g", c.parts, jobsOf(2)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want %q", name, err, c.want)
		}
	}
}
