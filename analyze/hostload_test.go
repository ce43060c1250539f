package analyze

import (
	"strings"
	"testing"

	"github.com/xrun-dev/xrun/result"
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
		{"just under", &result.HostLoad{CPUs: 2, MaxLoad1: 2.9, OthersShare: HostBusyShare - 0.001, JobShare: 0.95}, false, ""},
		{"at the threshold", &result.HostLoad{CPUs: 2, MaxLoad1: 3.2, OthersShare: HostBusyShare, JobShare: 0.85}, true,
			"other processes used 10 % of the CPUs while it was timed, and the CPUs were 95 % busy (load 3.2 on 2 CPUs)"},
		// The measured steady case: the job and the others left an eighth idle.
		{"room to spare", &result.HostLoad{CPUs: 2, MaxLoad1: 4.1, OthersShare: 0.28, JobShare: 0.58}, false, ""},
		{"busy", &result.HostLoad{CPUs: 2, Load1: 7.9, MaxLoad1: 8.2, OthersShare: 0.63, JobShare: 0.37}, true,
			"other processes used 63 % of the CPUs while it was timed, and the CPUs were 100 % busy (load 8.2 on 2 CPUs)"},
		{"stolen", &result.HostLoad{CPUs: 1, MaxLoad1: 1.5, OthersShare: 0.05, StealShare: 0.06, JobShare: 0.85}, true,
			"other processes used 5 % of the CPUs while it was timed, the hypervisor stole 6 %, and the CPUs were 96 % busy (load 1.5 on 1 CPU)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			busy, why := HostBusy(c.h, HostBusyShare)
			if busy != c.busy || why != c.why {
				t.Errorf("HostBusy = %v, %q; want %v, %q", busy, why, c.busy, c.why)
			}
			if busy, _ := HostBusy(c.h, 0); busy {
				t.Error("busy with the check off")
			}
		})
	}
}

// A timing over the threshold gets a host_busy warning naming its
// implementation and case, one under it none; the run's summary counts it,
// and the threshold it was made with is the warnings' too.
func TestHostBusyWarningsAndSummary(t *testing.T) {
	r := fixture()
	if HostLoad(r, HostBusyShare) != nil {
		t.Error("a run without host load has a summary")
	}
	load := func(others float64, mhz float64) *result.HostLoad {
		return &result.HostLoad{Windows: 3, WallS: 0.6, CPUs: 2, Load1: 5, MaxLoad1: 5 + others, OthersShare: others,
			JobShare: 0.9, CPUMHz: mhz}
	}
	r.Cases[0].Results["baseline"].Timing.HostLoad = load(0.03, 2400)
	r.Cases[0].Results["pipelined"].Timing.HostLoad = load(0.63, 2445)
	r.Cases[1].Results["baseline"].Timing.HostLoad = load(0.09, 0)
	busy := func() []result.Warning {
		var out []result.Warning
		for _, w := range Warnings(r) {
			if w.Kind == WarnHostBusy {
				out = append(out, w)
			}
		}
		return out
	}
	r.Env.HostLoad = HostLoad(r, HostBusyShare)
	got := busy()
	if len(got) != 1 || got[0].Implementation != "pipelined" || got[0].Label != "T=1024" ||
		!strings.Contains(got[0].Message, "pipelined at T=1024 was timed on a busy host: other processes used 63 % of the CPUs") {
		t.Errorf("host_busy warnings = %+v", got)
	}
	want := result.HostLoadSummary{Timings: 3, CPUs: 2, MaxLoad1: 5.63, MedianOthersShare: 0.09, MaxOthersShare: 0.63,
		MinCPUMHz: 2400, MaxCPUMHz: 2445, BusyShare: HostBusyShare, FullShare: HostFullShare, Busy: 1}
	if *r.Env.HostLoad != want {
		t.Errorf("HostLoad = %+v\nwant      %+v", r.Env.HostLoad, want)
	}
	// XRUN_HOST_BUSY_SHARE=0.05 flags both; off flags none.
	r.Env.HostLoad = HostLoad(r, 0.05)
	if n := len(busy()); n != 2 || r.Env.HostLoad.Busy != 2 {
		t.Errorf("at 0.05: %d warnings, summary %+v", n, r.Env.HostLoad)
	}
	r.Env.HostLoad = HostLoad(r, 0)
	if n := len(busy()); n != 0 || r.Env.HostLoad.Busy != 0 || r.Env.HostLoad.BusyShare != 0 {
		t.Errorf("off: %d warnings, summary %+v", n, r.Env.HostLoad)
	}
}
