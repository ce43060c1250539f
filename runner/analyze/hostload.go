package analyze

import (
	"fmt"
	"slices"

	"github.com/xrun-dev/xrun/runner/result"
	"github.com/xrun-dev/xrun/runner/stats"
)

// WarnHostBusy: other processes (or the hypervisor) took a share of the
// job's CPUs at or above HostBusyShare while an implementation was timed.
const WarnHostBusy = "host_busy"

// HostBusyShare is the contention (HostLoad.OthersShare + StealShare) at
// or above which a CPU timing was taken on a busy host. On the 2-CPU
// development machine the timings of an unchanged implementation stayed
// within a few percent while others used up to about a tenth of the CPUs,
// and moved by tens of percent once others used half of them or more
// (docs/regressions.md, "Noisy values", has the figures and the command).
const HostBusyShare = 0.25

// HostBusy reports whether h was taken on a busy host and, if so, in
// words: "other processes used 63 % of the CPUs while it was timed (load
// 8.2 on 2 CPUs)".
func HostBusy(h *result.HostLoad) (bool, string) {
	if h == nil || h.OthersShare+h.StealShare < HostBusyShare {
		return false, ""
	}
	why := fmt.Sprintf("other processes used %.0f %% of the CPUs while it was timed", 100*h.OthersShare)
	if h.StealShare >= 0.01 {
		why += fmt.Sprintf(" and the hypervisor stole %.0f %%", 100*h.StealShare)
	}
	cpus := "CPUs"
	if h.CPUs == 1 {
		cpus = "CPU"
	}
	return true, why + fmt.Sprintf(" (load %.1f on %d %s)", h.MaxLoad1, h.CPUs, cpus)
}

// hostBusyWarnings are the host_busy warnings of r's timings.
func hostBusyWarnings(r *result.Results, names []string) []result.Warning {
	var out []result.Warning
	for _, c := range r.Cases {
		label := CaseLabel(c)
		for _, name := range names {
			t := timing(c.Results[name])
			if t == nil {
				continue
			}
			if busy, why := HostBusy(t.HostLoad); busy {
				out = append(out, result.Warning{Kind: WarnHostBusy, Implementation: name, Label: label,
					Message: fmt.Sprintf("%s at %s was timed on a busy host: %s; its time can move between runs", name, label, why)})
			}
		}
	}
	return out
}

// HostLoad summarises the host's load over r's timings, nil when none
// has one (GPU runs, other OSes).
func HostLoad(r *result.Results) *result.HostLoadSummary {
	var others []float64
	s := &result.HostLoadSummary{BusyShare: HostBusyShare}
	for _, c := range r.Cases {
		for _, ir := range c.Results {
			t := timing(ir)
			if t == nil || t.HostLoad == nil {
				continue
			}
			h := t.HostLoad
			s.Timings++
			s.CPUs = max(s.CPUs, h.CPUs)
			s.MaxLoad1 = max(s.MaxLoad1, h.MaxLoad1)
			s.MaxOthersShare = max(s.MaxOthersShare, h.OthersShare)
			s.MaxStealShare = max(s.MaxStealShare, h.StealShare)
			others = append(others, h.OthersShare)
			if h.CPUMHz > 0 {
				if s.MinCPUMHz == 0 || h.CPUMHz < s.MinCPUMHz {
					s.MinCPUMHz = h.CPUMHz
				}
				s.MaxCPUMHz = max(s.MaxCPUMHz, h.CPUMHz)
			}
			if busy, _ := HostBusy(h); busy {
				s.Busy++
			}
		}
	}
	if s.Timings == 0 {
		return nil
	}
	slices.Sort(others)
	s.MedianOthersShare = stats.Quantile(others, 0.5)
	return s
}
