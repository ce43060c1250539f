package report

import (
	"strings"
	"testing"

	"github.com/xrun-dev/xrun/result"
)

func TestTextSaysASplitSweepsParts(t *testing.T) {
	for _, c := range []struct {
		split *result.Split
		want  string
	}{
		{&result.Split{Part: 2, Parts: 4}, "part 2/4 of the sweep: cases 2, 6, 10, ...\n"},
		{&result.Split{Parts: 2, Jobs: []result.SplitJob{{Part: 1, JobID: "a1", Host: "slurm://login", Status: "succeeded"}, {Part: 2, JobID: "b2", Host: "slurm://login", Status: "cancelled"}}},
			"gathered from 2 jobs: part 1/2 job a1 on slurm://login (succeeded), part 2/2 job b2 on slurm://login (cancelled)\n"},
	} {
		var b strings.Builder
		if err := Text(&b, &result.Results{Experiment: "e", Status: "succeeded", Split: c.split}); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), c.want) {
			t.Errorf("Text lacks %q:\n%s", c.want, b.String())
		}
		b.Reset()
		if err := Markdown(&b, &result.Results{Experiment: "e", Status: "succeeded", Split: c.split}); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), strings.TrimSuffix(c.want, "\n")) {
			t.Errorf("Markdown lacks %q:\n%s", c.want, b.String())
		}
	}
}
