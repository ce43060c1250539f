package analyze

import (
	"strings"
	"testing"

	"github.com/xrun-dev/xrun/runner/result"
)

func TestHostBusy(t *testing.T) {
	for _, c := range []struct {
		name string
		h    *result.HostLoad
		busy bool
		why  string
	}{
		{"not read", nil, false, ""},
		{"quiet", &result.HostLoad{CPUs: 2, MaxLoad1: 1.1, OthersShare: 0.04, JobShare: 0.5}, false, ""},
		{"just under", &result.HostLoad{CPUs: 2, MaxLoad1: 2.9, OthersShare: HostBusyShare - 0.001}, false, ""},
		{"at the threshold", &result.HostLoad{CPUs: 2, MaxLoad1: 3.2, OthersShare: HostBusyShare}, true,
			"other processes used 25 % of the CPUs while it was timed (load 3.2 on 2 CPUs)"},
		{"busy", &result.HostLoad{CPUs: 2, Load1: 7.9, MaxLoad1: 8.2, OthersShare: 0.63, JobShare: 0.37}, true,
			"other processes used 63 % of the CPUs while it was timed (load 8.2 on 2 CPUs)"},
		{"stolen", &result.HostLoad{CPUs: 1, MaxLoad1: 1.5, OthersShare: 0.1, StealShare: 0.2}, true,
			"other processes used 10 % of the CPUs while it was timed and the hypervisor stole 20 % (load 1.5 on 1 CPU)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			busy, why := HostBusy(c.h)
			if busy != c.busy || why != c.why {
				t.Errorf("HostBusy = %v, %q; want %v, %q", busy, why, c.busy, c.why)
			}
		})
	}
}

// A timing over the threshold gets a host_busy warning naming its
// implementation and case, one under it none; the run's summary counts it.
func TestHostBusyWarningsAndSummary(t *testing.T) {
	r := fixture()
	if HostLoad(r) != nil {
		t.Error("a run without host load has a summary")
	}
	load := func(others float64, mhz float64) *result.HostLoad {
		return &result.HostLoad{Windows: 3, WallS: 0.6, CPUs: 2, Load1: 5, MaxLoad1: 5 + others, OthersShare: others,
			JobShare: 0.5, CPUMHz: mhz}
	}
	r.Cases[0].Results["baseline"].Timing.HostLoad = load(0.03, 2400)
	r.Cases[0].Results["pipelined"].Timing.HostLoad = load(0.63, 2445)
	r.Cases[1].Results["baseline"].Timing.HostLoad = load(0.05, 0)
	var busy []result.Warning
	for _, w := range Warnings(r) {
		if w.Kind == WarnHostBusy {
			busy = append(busy, w)
		}
	}
	if len(busy) != 1 || busy[0].Implementation != "pipelined" || busy[0].Label != "T=1024" ||
		!strings.Contains(busy[0].Message, "pipelined at T=1024 was timed on a busy host: other processes used 63 % of the CPUs") {
		t.Errorf("host_busy warnings = %+v", busy)
	}
	want := result.HostLoadSummary{Timings: 3, CPUs: 2, MaxLoad1: 5.63, MedianOthersShare: 0.05, MaxOthersShare: 0.63,
		MinCPUMHz: 2400, MaxCPUMHz: 2445, BusyShare: HostBusyShare, Busy: 1}
	if got := HostLoad(r); got == nil || *got != want {
		t.Errorf("HostLoad = %+v\nwant      %+v", got, want)
	}
}
