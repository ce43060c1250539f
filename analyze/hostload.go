package analyze

import (
	"fmt"
	"math"
	"slices"

	"github.com/xrun-dev/xrun/result"
)

// WarnHostBusy: while an implementation was timed, other processes (or
// the hypervisor) took HostBusyShare or more of the job's CPUs and left
// them less than a tenth idle (HostBusy).
const WarnHostBusy = "host_busy"

// HostBusyShare is the contention (HostLoad.OthersShare + StealShare) at
// or above which a CPU timing was taken on a busy host, where the CPUs
// were also full (HostFullShare); XRUN_HOST_BUSY_SHARE sets another in a
// container. A job that uses every CPU loses about others/(1-others) of
// its time to them: 11 % at a tenth, twice the regression rule's 5 %
// floor (docs/regressions.md, "Noisy values").
const HostBusyShare = 0.1

// HostFullShare is how busy the CPUs must have been (the job, the others
// and the hypervisor together) for the others to have taken time the job
// wanted: on the 2-CPU development machine a call that used 0.58 of the
// CPUs was steady beside others that used 0.28 (0.88 together), and
// spread out or 14 % to 4.2 times slower in every timing where they were
// 0.99 busy or more.
const HostFullShare = 0.9

// HostBusy reports whether h was taken on a busy host: one whose
// contention (OthersShare + StealShare) was share or more (share 0: the
// check is off) while the CPUs were full (HostFullShare), and if so, in
// words: "other processes used 63 % of the CPUs while it was timed, and
// the CPUs were 99 % busy (load 8.2 on 2 CPUs)".
func HostBusy(h *result.HostLoad, share float64) (bool, string) {
	if h == nil || share <= 0 {
		return false, ""
	}
	contention := h.OthersShare + h.StealShare
	used := contention + h.JobShare
	if contention < share || used < HostFullShare {
		return false, ""
	}
	why := fmt.Sprintf("other processes used %.0f %% of the CPUs while it was timed", 100*h.OthersShare)
	if h.StealShare >= 0.01 {
		why += fmt.Sprintf(", the hypervisor stole %.0f %%", 100*h.StealShare)
	}
	cpus := "CPUs"
	if h.CPUs == 1 {
		cpus = "CPU"
	}
	return true, why + fmt.Sprintf(", and the CPUs were %.0f %% busy (load %.1f on %d %s)", 100*min(used, 1), h.MaxLoad1, h.CPUs, cpus)
}

// busyShare is the threshold r's host load summary was made with
// (HostLoad), HostBusyShare without one.
func busyShare(r *result.Results) float64 {
	if r.Env.HostLoad != nil {
		return r.Env.HostLoad.BusyShare
	}
	return HostBusyShare
}

// hostBusyWarnings are the host_busy warnings of r's timings, at the
// threshold of its summary (HostLoad).
func hostBusyWarnings(r *result.Results, names []string) []result.Warning {
	var out []result.Warning
	share := busyShare(r)
	for _, c := range r.Cases {
		label := CaseLabel(c)
		for _, name := range names {
			t := timing(c.Results[name])
			if t == nil {
				continue
			}
			if busy, why := HostBusy(t.HostLoad, share); busy {
				out = append(out, result.Warning{Kind: WarnHostBusy, Implementation: name, Label: label,
					Message: fmt.Sprintf("%s at %s was timed on a busy host: %s; its time can move between runs", name, label, why)})
			}
		}
	}
	return out
}

// HostLoad summarises the host's load over r's timings, counting those at
// or above share (HostBusy; 0: none is), nil when none has one (GPU runs,
// other OSes). Warnings then flags the same timings.
func HostLoad(r *result.Results, share float64) *result.HostLoadSummary {
	var others []float64
	s := &result.HostLoadSummary{BusyShare: max(share, 0), FullShare: HostFullShare}
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
			if busy, _ := HostBusy(h, share); busy {
				s.Busy++
			}
		}
	}
	if s.Timings == 0 {
		return nil
	}
	slices.Sort(others)
	s.MedianOthersShare = math.Round(Quantile(others, 0.5)*1000) / 1000
	return s
}
