// A HostLoadReader reads how busy the machine was while a CPU timing was
// taken: the 1-minute load average, the share of the job's CPUs that other
// processes used, the share the hypervisor stole, and the CPUs' clock. A
// HostLoadReader takes HostSamples from /proc and /sys (Linux); a HostLoadAcc
// sums the windows between pairs of them, one implementation on one case, into the timing's
// result.HostLoad.
//
// In a container /proc/loadavg and /proc/stat are the host's, which is what
// is wanted: the neighbours that slow a timing are the host's processes,
// not the container's. The job's own processes are read from the
// container's /proc (the runner and every process under it).

package timing

import (
	"math"
	"time"

	"github.com/xrun-dev/xrun/result"
)

// HostSample is one reading of the machine. The CPU and job times are
// cumulative counters in clock ticks: only differences between two
// Samples mean anything.
type HostSample struct {
	At time.Time
	// Load1 is the 1-minute load average (/proc/loadavg).
	Load1 float64
	// CPU is the time of the CPUs the job may run on (/proc/stat).
	CPU CPUTimes
	// CPUs is how many CPUs CPU adds up.
	CPUs int
	// Job is the CPU time of each of the job's processes (the runner and
	// every process under it), by pid (/proc/<pid>/stat, user + system).
	// Listed says Job came from a listing of every process; otherwise it
	// holds those of the last listing that still run.
	Job    map[int]uint64
	Listed bool
	// MHz is the mean current clock of the job's CPUs; 0 where the machine
	// does not expose it.
	MHz float64
}

// CPUTimes is the time a set of CPUs spent, in clock ticks.
type CPUTimes struct {
	// Busy is user, nice, system, irq and softirq time: running anything
	// (guest time is part of user and nice).
	Busy uint64
	// Steal is the time the hypervisor ran something else while a CPU
	// had work.
	Steal uint64
	// Total is every state, idle and iowait included: the set's wall time.
	Total uint64
}

// HostLoadAcc sums the windows in which one implementation was timed on one case.
type HostLoadAcc struct {
	windows  int
	wall     time.Duration
	cpu      CPUTimes
	job      uint64
	cpus     int
	loadSum  float64
	loadMax  float64
	loads    int
	mhzSum   float64
	mhzCount int
}

// Add sums the window from before to after: the CPUs' time, the job's,
// and the load and clock read at both ends. A process of the job that
// ended in the window is lost, and counts as another's; one that started
// in it counts all its time where before listed every process (otherwise
// it may have started earlier, and is left out).
func (a *HostLoadAcc) Add(before, after HostSample) {
	if !after.At.After(before.At) || after.CPU.Total <= before.CPU.Total {
		return
	}
	a.windows++
	a.wall += after.At.Sub(before.At)
	a.cpu.Busy += sub(after.CPU.Busy, before.CPU.Busy)
	a.cpu.Steal += sub(after.CPU.Steal, before.CPU.Steal)
	a.cpu.Total += after.CPU.Total - before.CPU.Total
	for pid, t := range after.Job {
		if b, ok := before.Job[pid]; ok || before.Listed {
			a.job += sub(t, b)
		}
	}
	a.cpus = max(a.cpus, after.CPUs)
	for _, s := range []HostSample{before, after} {
		a.loadSum += s.Load1
		a.loadMax = max(a.loadMax, s.Load1)
		a.loads++
		if s.MHz > 0 {
			a.mhzSum += s.MHz
			a.mhzCount++
		}
	}
}

// sub is a - b for counters, 0 where a counter went back (a reused pid).
func sub(a, b uint64) uint64 {
	if a < b {
		return 0
	}
	return a - b
}

// HostLoad is what the windows add up to, nil without one. The shares
// are of the job's CPUs' time over the windows (their wall time times
// their number): OthersShare is their busy time less the job's own.
func (a *HostLoadAcc) HostLoad() *result.HostLoad {
	if a.windows == 0 || a.cpu.Total == 0 {
		return nil
	}
	total, busy := float64(a.cpu.Total), float64(a.cpu.Busy)
	// The job's ticks and the CPUs' are counted apart and each rounded
	// down: a job that used every tick can read a tick more than the CPUs.
	job := min(float64(a.job), busy)
	h := &result.HostLoad{
		Windows:     a.windows,
		WallS:       round(a.wall.Seconds(), 3),
		CPUs:        a.cpus,
		Load1:       round(a.loadSum/float64(a.loads), 2),
		MaxLoad1:    round(a.loadMax, 2),
		OthersShare: round((busy-job)/total, 3),
		JobShare:    round(job/total, 3),
		StealShare:  round(float64(a.cpu.Steal)/total, 3),
	}
	if a.mhzCount > 0 {
		h.CPUMHz = round(a.mhzSum/float64(a.mhzCount), 0)
	}
	return h
}

func round(v float64, digits int) float64 {
	p := math.Pow(10, float64(digits))
	return math.Round(v*p) / p
}
